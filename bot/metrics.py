"""Prometheus metrics for every surface, exposed by the server at GET /metrics.

Why hand-written: the server needs a handful of counters and histograms in the Prometheus
text format (version 0.0.4); a small thread-safe registry does that without another
dependency. Each replica exposes its own numbers; Prometheus sums over pods.

Surfaces record what they do with the helpers at the bottom:

    from bot import metrics
    with metrics.estimator_timer("slack"):      # kvdoctor_estimator_duration_seconds
        diag = diagnose(text)
    metrics.record_reply("slack")               # kvdoctor_replies_total
    metrics.record_error("slack_api")           # kvdoctor_errors_total{kind=...}

HTTP requests (count and latency by route) are recorded by the server's middleware, and the
Hugging Face Hub latency by `instrument_hub()` (an event hook on huggingface_hub's client).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Latency buckets in seconds: the estimator answers in milliseconds from the catalog and in
# seconds when the hub is involved; the top buckets catch hub timeouts (KVDOCTOR_HUB_TIMEOUT).
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape_label(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


class _Metric:
    kind = ""

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()

    def _key(self, labels: dict[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {tuple(labels)}")
        return tuple(str(labels[n]) for n in self.labelnames)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help_text, labelnames)
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def render(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return self.header() + [f"{self.name}{_labels(self.labelnames, k)} {_fmt(v)}" for k, v in items]


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                 buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        super().__init__(name, help_text, labelnames)
        self.buckets = tuple(sorted(buckets))
        # per label set: [count per bucket (non-cumulative) ..., +Inf bucket], sum, count
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            counts, total = self._series.setdefault(key, ([0] * (len(self.buckets) + 1), [0.0]))
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    counts[i] += 1
                    break
            else:
                counts[-1] += 1
            total[0] += value

    @contextmanager
    def time(self, **labels: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - start, **labels)

    def count(self, **labels: str) -> int:
        with self._lock:
            series = self._series.get(self._key(labels))
            return sum(series[0]) if series else 0

    def render(self) -> list[str]:
        lines = self.header()
        with self._lock:
            items = sorted((k, (list(c), t[0])) for k, (c, t) in self._series.items())
        for key, (counts, total) in items:
            cumulative = 0
            for bound, n in zip(self.buckets, counts, strict=False):
                cumulative += n
                le = 'le="' + _fmt(bound) + '"'
                lines.append(f"{self.name}_bucket{_labels(self.labelnames, key, le)} {cumulative}")
            cumulative += counts[-1]
            le = 'le="+Inf"'
            lines.append(f"{self.name}_bucket{_labels(self.labelnames, key, le)} {cumulative}")
            lines.append(f"{self.name}_sum{_labels(self.labelnames, key)} {_fmt(total)}")
            lines.append(f"{self.name}_count{_labels(self.labelnames, key)} {cumulative}")
        return lines


class Registry:
    def __init__(self) -> None:
        self._metrics: list[_Metric] = []

    def register(self, metric: _Metric) -> _Metric:
        self._metrics.append(metric)
        return metric

    def render(self) -> str:
        lines: list[str] = []
        for metric in self._metrics:
            lines += metric.render()  # type: ignore[attr-defined]
        return "\n".join(lines) + "\n"


REGISTRY = Registry()

HTTP_REQUESTS = REGISTRY.register(Counter(
    "kvdoctor_http_requests_total", "HTTP requests handled, by method, route template and status code.",
    ("method", "route", "status"),
))
HTTP_SECONDS = REGISTRY.register(Histogram(
    "kvdoctor_http_request_duration_seconds", "HTTP request latency by route template.", ("route",),
))
REPLIES = REGISTRY.register(Counter(
    "kvdoctor_replies_total", "Replies produced (posted to Slack/Discourse, or rendered by the web page/API), by surface.",
    ("surface",),
))
ERRORS = REGISTRY.register(Counter(
    "kvdoctor_errors_total", "Errors by kind (bad_input, too_large, rate_limited, internal, hub, and surface-specific kinds).",
    ("kind",),
))
HUB_SECONDS = REGISTRY.register(Histogram(
    "kvdoctor_hub_request_duration_seconds", "Hugging Face Hub HTTP request latency (to response headers), by outcome.",
    ("outcome",),
))
ESTIMATOR_SECONDS = REGISTRY.register(Histogram(
    "kvdoctor_estimator_duration_seconds", "Time spent in the estimator (diagnose / estimate), by surface and operation.",
    ("surface", "op"),
))


def render() -> str:
    """The whole registry in Prometheus text format."""
    return REGISTRY.render()


def record_reply(surface: str) -> None:
    REPLIES.inc(surface=surface)


def record_error(kind: str) -> None:
    ERRORS.inc(kind=kind)


def estimator_timer(surface: str, op: str = "diagnose"):
    """Context manager timing one estimator call (`with estimator_timer("slack"): diagnose(...)`)."""
    return ESTIMATOR_SECONDS.time(surface=surface, op=op)


# -- Hugging Face Hub latency ------------------------------------------------------------------

_HUB_LOCK = threading.Lock()
_hub_instrumented = False


def _hub_request_hook(request) -> None:
    request.extensions["kvdoctor_start"] = time.perf_counter()


def _hub_response_hook(response) -> None:
    start = response.request.extensions.get("kvdoctor_start")
    if start is None:
        return
    outcome = "ok" if response.status_code < 400 else f"http_{response.status_code // 100}xx"
    HUB_SECONDS.observe(time.perf_counter() - start, outcome=outcome)
    if response.status_code >= 500 or response.status_code == 429:
        record_error("hub")


def instrument_hub() -> bool:
    """Time every huggingface_hub HTTP request (kvdoctor_hub_request_duration_seconds).

    Wraps the client factory huggingface_hub uses (whatever it is: the default or one the
    estimator set) and adds event hooks to the client it returns, so the estimator's own
    settings are kept. Idempotent; False when huggingface_hub has no such factory.
    """
    global _hub_instrumented
    with _HUB_LOCK:
        if _hub_instrumented:
            return True
        try:
            from huggingface_hub.utils import _http
        except ImportError:
            return False
        inner = getattr(_http, "_GLOBAL_CLIENT_FACTORY", None)
        setter = getattr(_http, "set_client_factory", None)
        if inner is None or setter is None:
            return False

        def factory():
            client = inner()
            hooks = client.event_hooks
            hooks.setdefault("request", []).append(_hub_request_hook)
            hooks.setdefault("response", []).append(_hub_response_hook)
            client.event_hooks = hooks
            return client

        setter(factory)
        _hub_instrumented = True
        return True
