"""Errors the CLI and the bots turn into one-line messages (exit code 2), never tracebacks.

Every failure a user can cause (bad model id, unknown GPU, bad flag, unreadable paste, hub
trouble) raises a subclass of `KvdoctorError` whose `str()` is the sentence to show.
"""

from __future__ import annotations


class KvdoctorError(Exception):
    """Base class: the message is user-facing and complete."""


class BadInput(KvdoctorError):
    """Input that cannot be read at all (binary junk, empty file, malformed flag value)."""


class UnknownGpu(KvdoctorError):
    """A GPU name or size we cannot map to a memory size."""


class ModelUnavailable(KvdoctorError):
    """The model's config could not be obtained (not found, gated, offline, hub down)."""


class ModelNotFound(ModelUnavailable):
    """No such repo/dir anywhere we looked."""


class ModelGated(ModelUnavailable):
    """The repo exists but needs accepted licence / a token."""


class ModelConfigUnusable(ModelUnavailable):
    """The config.json was found but holds a value kvdoctor cannot compute with: a type or size no
    model has (`"num_key_value_heads": "x"`, a billion layers) or a shape kvdoctor does not read yet
    (a per-layer list where it reads one number). A Hub config is input like a paste: it gets a
    sentence, never a traceback."""


class HubUnavailable(ModelUnavailable):
    """Network trouble (timeout, 5xx) after bounded retries."""
