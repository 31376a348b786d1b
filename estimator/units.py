"""Byte units: bytes inside the estimator, GiB (2^30) where vLLM prints them."""

from __future__ import annotations

GiB = 2**30
MiB = 2**20


def gib(x: float) -> float:
    return x / GiB


def fmt_gib(x: float, nd: int = 2) -> str:
    return f"{x / GiB:.{nd}f}"


# vLLM prints GiB figures (and concurrency factors) to two decimals: a printed figure is the true
# one ± half a hundredth. Comparisons with a printed figure allow a hair more, so that a value on the
# boundary still agrees after float rounding.
HALF_HUNDREDTH = 0.005
PRINTED_SLACK = 0.0051
