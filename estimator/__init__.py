"""kvdoctor's estimator: vLLM's memory arithmetic, a paste reader, derivation, advice, replies.

Public API (stable; surfaces and scripts import only these names).
"""

from estimator.api import estimate_json, load_model, run_estimate, settings_from_dict
from estimator.diagnosis import Diagnosis, diagnose, explain_json
from estimator.errors import (
    BadInput,
    HubUnavailable,
    KvdoctorError,
    ModelGated,
    ModelNotFound,
    ModelUnavailable,
    UnknownGpu,
)
from estimator.memory import Estimate, estimate, rerun
from estimator.paste_text import decode as decode_paste
from estimator.render import redact, render_markdown, render_slack, render_text
from estimator.spec import ModelSpec, spec_from_config
from estimator.vllm import EngineSettings, parse_flags, profile_for

__all__ = [
    "BadInput",
    "Diagnosis",
    "EngineSettings",
    "Estimate",
    "HubUnavailable",
    "KvdoctorError",
    "ModelGated",
    "ModelNotFound",
    "ModelSpec",
    "ModelUnavailable",
    "UnknownGpu",
    "decode_paste",
    "diagnose",
    "estimate",
    "estimate_json",
    "explain_json",
    "load_model",
    "parse_flags",
    "profile_for",
    "redact",
    "render_markdown",
    "render_slack",
    "render_text",
    "rerun",
    "run_estimate",
    "settings_from_dict",
    "spec_from_config",
]
