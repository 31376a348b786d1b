"""Byte units: bytes inside the estimator, GiB (2^30) where vLLM prints them."""

from __future__ import annotations

GiB = 2**30
MiB = 2**20


def gib(x: float) -> float:
    return x / GiB


def fmt_gib(x: float, nd: int = 2) -> str:
    return f"{x / GiB:.{nd}f}"
