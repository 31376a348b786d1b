"""kvdoctor's estimator: vLLM's memory arithmetic, a paste reader, derivation, advice, replies.

Public API (stable; surfaces and scripts import only these names).
"""

from estimator.diagnosis import Diagnosis, diagnose, render_markdown, render_slack, render_text
from estimator.errors import (
    BadInput,
    KvdoctorError,
    ModelGated,
    ModelNotFound,
    ModelUnavailable,
    UnknownGpu,
)

__all__ = [
    "BadInput",
    "Diagnosis",
    "KvdoctorError",
    "ModelGated",
    "ModelNotFound",
    "ModelUnavailable",
    "UnknownGpu",
    "diagnose",
    "render_markdown",
    "render_slack",
    "render_text",
]
