"""The paste-your-error web page and its JSON API.

Why a server-rendered page: it must work offline, behind any proxy, with JavaScript off, and
be safe with hostile input. The form posts to /explain and the answer comes back as plain
HTML: the explanation, what was read from the paste, an inline SVG stacked bar of where the
GPU memory went, and the fixes as copyable commands. No external assets; a per-response CSP
nonce allows only our own inline style and the tiny copy-button script. Every piece of text
that came from the user or the estimator goes through `html.escape` (the `_e` helper).

Routes (`web_routes(settings, store)`):
- GET  /              the page
- POST /explain       form post → the page with the answer
- POST /api/explain   {"text", "model"?, "gpu"?, "vllm_version"?} → the JSON of design.md §4
- POST /api/estimate  {"model", "gpu"?, "settings"?: {...}, or settings keys at top level} → §4 estimate

Limits: bodies over `max_body_bytes` get 413 (also enforced for every route by the server's
middleware), and each client IP gets `rate_limit_per_minute` POSTs per minute (token bucket,
per replica) before 429.
"""

from __future__ import annotations

import html
import inspect
import json
import logging
import secrets
import threading
import time
import urllib.parse
from collections import OrderedDict
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from bot import metrics
from bot.settings import Settings
from bot.store import Store
from estimator.render import inline_markdown as _inline
from estimator.render import markdown_to_html

log = logging.getLogger("kvdoctor.web")

GIB = 1 << 30
FIELD_MAX = 300  # model ids, GPU names and versions are short; refuse novels in them

# design.md §4 "settings" keys accepted by POST /api/estimate.
ESTIMATE_SETTINGS = (
    "vllm_version", "engine", "gpu_memory_utilization", "max_model_len", "tensor_parallel_size",
    "pipeline_parallel_size", "dtype", "kv_cache_dtype", "quantization", "max_num_seqs",
    "max_num_batched_tokens", "block_size", "enforce_eager",
)


# =============================================================================================
# Limits
# =============================================================================================
class TooLarge(Exception):
    """The request body is over the configured limit."""


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refusing (TooLarge) as soon as it is over `limit`, whatever Content-Length says."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class RateLimiter:
    """Token bucket per client IP: `per_minute` requests a minute, bursts up to that many.

    In memory, per process: with N replicas behind a load balancer a client gets up to N times
    the limit, which is enough to stop a loop hammering the estimator. 0 turns it off. The
    table is bounded (least recently seen IPs are dropped first).
    """

    def __init__(self, per_minute: int, max_clients: int = 10_000) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str, now: float | None = None) -> tuple[bool, float]:
        """(allowed, seconds until the next token) for one request from `client`."""
        if self.capacity <= 0:
            return True, 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(client, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            allowed = tokens >= 1.0
            if allowed:
                tokens -= 1.0
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return allowed, 0.0 if allowed else (1.0 - tokens) / self.rate


def client_ip(request: Request) -> str:
    # uvicorn rewrites request.client from X-Forwarded-For when the peer is in
    # KVDOCTOR_FORWARDED_ALLOW_IPS, so this is the real client behind a trusted proxy.
    return request.client.host if request.client else "unknown"


# =============================================================================================
# Estimator calls (import at call time: the estimator may be mid-rewrite, the page must load)
# =============================================================================================
def _diagnose(text: str, model: str | None, gpu: str | None, vllm_version: str | None, offline: bool,
              hub_timeout: float | None = None):
    from estimator import diagnose

    extra: dict[str, Any] = {}
    if hub_timeout is not None and "hub_timeout" in inspect.signature(diagnose).parameters:
        extra["hub_timeout"] = hub_timeout  # a slow model lookup is bounded by KVDOCTOR_HUB_TIMEOUT
    with metrics.estimator_timer("web", "diagnose"):
        # a person asked: a paste where vLLM refused the model before sizing memory gets its answer too
        return diagnose(text, model=model, gpu=gpu, vllm_version=vllm_version, offline=offline or None,
                        answer_refusals=True, **extra)


def _markdown(diag) -> str:
    from estimator import render_markdown

    return render_markdown(diag)


# =============================================================================================
# HTML pieces
# =============================================================================================
def _e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, dict) and "value" in value:
        return _fmt_value(value["value"])
    if isinstance(value, list | tuple):
        return ", ".join(_fmt_value(v) for v in value)
    return str(value)


def _value_table(values: dict, label: str) -> str:
    """A two-column table of the non-null scalar entries of `values`, each labelled `label`."""
    rows = []
    for key, value in (values or {}).items():
        if value is None or value == "" or (isinstance(value, list | tuple) and not value):
            continue
        if isinstance(value, dict) and "value" in value and value.get("value") is None:
            continue
        if isinstance(value, dict) and "value" not in value:
            continue  # nested structures are shown elsewhere (the bar, the reply)
        source = label
        if isinstance(value, dict):
            source = str(value.get("provenance") or value.get("source") or label)
        rows.append(
            f"<tr><th scope=\"row\"><code>{_e(key)}</code></th><td>{_e(_fmt_value(value))}</td>"
            f"<td class=\"prov\">{_e(source)}</td></tr>"
        )
    if not rows:
        return ""
    return f'<table class="kv"><tbody>{"".join(rows)}</tbody></table>'


# -- the stacked bar -----------------------------------------------------------------------------
# (key, label, CSS class, §4 estimate.memory key, facts key in GiB, derived.figures key)
SEGMENTS = (
    ("weights", "weights", "s-weights", "weights_bytes", "weights_gib", "weights"),
    ("activation", "activation peak", "s-act", "activation_bytes", "activation_peak_gib", "activation"),
    ("non_torch", "non-torch", "s-nontorch", "non_torch_bytes", "non_torch_gib", "non_torch"),
    ("graphs", "CUDA graphs", "s-graphs", "cuda_graph_bytes", "cuda_graph_gib", "cuda_graphs"),
    ("kv", "KV cache", "s-kv", "kv_cache_bytes", "kv_cache_gib", "kv_pool"),
)
PROVENANCE_TEXT = {"read": "read from your paste", "derived": "derived", "assumed": "assumed",
                   "estimated": "estimated"}


def _num(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _derived_figure(figures: dict, key: str) -> tuple[float, str] | None:
    """(bytes, provenance) of derived["figures"][key] when it is {"value": n, "unit": "bytes", ...}."""
    fig = figures.get(key)
    if not isinstance(fig, dict) or fig.get("unit", "bytes") != "bytes":
        return None
    value = _num(fig)
    if value is None:
        return None
    prov = str(fig.get("provenance") or "derived")
    return value, PROVENANCE_TEXT.get(prov, prov)


def memory_figures(result: dict) -> tuple[tuple[float, str] | None, list[tuple[str, str, str, float, str]]]:
    """((total bytes, provenance) or None, [(key, label, css class, bytes, provenance)]).

    Per part, first found wins: the estimator's derived figure with its own provenance (read,
    derived, estimated, assumed), then what vLLM printed in the paste (facts, GiB: "read"),
    then the forward estimate (design.md §4 estimate.memory: "estimated"). Nothing is computed
    here beyond GiB → bytes; a part nobody gave is left out, not guessed.
    """
    facts = result.get("facts") or {}
    estimate = result.get("estimate") or {}
    memory = estimate.get("memory") or {}
    derived = result.get("derived") or {}
    figures = derived.get("figures") if isinstance(derived.get("figures"), dict) else {}
    total: tuple[float, str] | None = _derived_figure(figures, "total")
    if total is None and (v := _num(facts.get("total_gpu_memory_gib"))) is not None:
        total = (v * GIB, "read from your paste")
    if total is None and (v := _num((estimate.get("gpu") or {}).get("total_bytes"))) is not None:
        total = (v, "estimated")
    segments = []
    for key, label, css, mem_key, fact_key, fig_key in SEGMENTS:
        if (found := _derived_figure(figures, fig_key)) is not None:
            segments.append((key, label, css, found[0], found[1]))
        elif (v := _num(facts.get(fact_key))) is not None:
            segments.append((key, label, css, v * GIB, "read from your paste"))
        elif (v := _num(memory.get(mem_key))) is not None:
            segments.append((key, label, css, v, "estimated"))
    return total, segments


def budget_svg(result: dict) -> str:
    """Inline SVG stacked bar: weights, activation, non-torch, graphs, KV, headroom."""
    total_known, segments = memory_figures(result)
    total = total_known[0] if total_known else None
    used = sum(s[3] for s in segments)
    width, height = 1000, 56
    parts: list[str] = []
    legend: list[str] = []
    partial = total is None or len(segments) < len(SEGMENTS)
    if total is not None and total > used:
        segments = segments + [("headroom", "headroom", "s-free", total - used,
                                "outside vLLM's budget: total minus the parts above")]
    scale_to = max(total or 0.0, used)
    if scale_to <= 0:
        parts.append(f'<rect x="0" y="0" width="{width}" height="{height}" class="s-unknown"><title>not known yet</title></rect>')
        parts.append(f'<text x="{width / 2}" y="{height / 2 + 6}" text-anchor="middle" class="bar-label">'
                     "memory figures not known yet: see below for what to paste</text>")
        caption = "GPU memory budget: no figures in the paste yet"
    else:
        x = 0.0
        for key, label, css, nbytes, prov in segments:
            w = width * nbytes / scale_to
            gib = nbytes / GIB
            tip = f"{label}: {gib:.2f} GiB ({prov})"
            parts.append(
                f'<rect x="{x:.2f}" y="0" width="{max(w, 0.5):.2f}" height="{height}" class="{css}" '
                f'data-segment="{_e(key)}"><title>{_e(tip)}</title></rect>'
            )
            if w > 14 + 9 * len(label):  # room for the label inside its part
                parts.append(f'<text x="{x + w / 2:.2f}" y="{height / 2 + 6}" text-anchor="middle" '
                             f'class="bar-label">{_e(label)}</text>')
            legend.append(f'<li><span class="sw {css}"></span>{_e(label)}: <strong>{gib:,.2f} GiB</strong> '
                          f'<span class="prov">({_e(prov)})</span></li>')
            x += w
        caption = "GPU memory per GPU"
        if total_known is not None:
            caption += f" — total {total_known[0] / GIB:,.2f} GiB ({total_known[1]})"
        if partial:
            caption += " (partial: some parts are not known yet)"
    svg = (
        f'<svg class="budget" viewBox="0 0 {width} {height}" width="100%" height="{height}" role="img" '
        f'aria-label="{_e(caption)}" preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">'
        + "".join(parts) + "</svg>"
    )
    return (f'<figure class="bar"><figcaption>{_e(caption)}</figcaption>{svg}'
            f'<ul class="legend">{"".join(legend)}</ul></figure>')


def fixes_html(suggestions: list[dict]) -> str:
    if not suggestions:
        return ""
    items = []
    for n, s in enumerate(suggestions, start=1):
        cmd = s.get("command") or s.get("flags") or ""
        if isinstance(cmd, list | tuple):
            cmd = " ".join(str(c) for c in cmd)
        fits = s.get("fits")
        badge = ('<span class="badge ok">fits</span>' if fits is True
                 else '<span class="badge no">does not fit</span>' if fits is False else "")
        numbers = []
        if s.get("kv_cache_tokens") is not None:
            numbers.append(f"KV cache: {_e(_fmt_value(s['kv_cache_tokens']))} tokens")
        if s.get("max_concurrency") is not None:
            numbers.append(f"max concurrency: {_e(_fmt_value(s['max_concurrency']))}")
        predicted = f'<p class="pred">predicted — {" · ".join(numbers)}</p>' if numbers else ""
        why = f"<p>{_inline(_e(s.get('why')))}</p>" if s.get("why") else ""
        items.append(
            f'<li class="fix">{badge}<div class="cmd"><pre><code id="fix-{n}">{_e(cmd)}</code></pre>'
            f'<button type="button" class="copy" data-copy="fix-{n}">Copy</button></div>{why}{predicted}</li>'
        )
    return f'<section><h2>Fixes</h2><ol class="fixes">{"".join(items)}</ol></section>'


CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:60rem;margin:0 auto;padding:1rem 1.5rem 3rem}
h1{font-size:1.4rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
textarea{width:100%;min-height:14rem;font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;box-sizing:border-box}
label{display:block;font-weight:600;margin:.6rem 0 .2rem}
.row{display:flex;gap:1rem;flex-wrap:wrap}.row>div{flex:1 1 12rem}
input[type=text]{width:100%;box-sizing:border-box;padding:.3rem}
button{padding:.45rem 1.1rem;margin-top:.8rem;font-weight:600;cursor:pointer}
.answer{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem 1.2rem 1rem;margin:1rem 0}
pre{background:#f3f3f3;padding:.6rem;overflow-x:auto;margin:.3rem 0}
code{font:13px ui-monospace,Menlo,Consolas,monospace}
.cmd{display:flex;align-items:flex-start;gap:.5rem}.cmd pre{flex:1;margin:0}.copy{margin-top:0}
.fixes li{margin:.8rem 0}
.badge{display:inline-block;font-size:.8rem;border-radius:3px;padding:0 .4rem;margin-bottom:.2rem}
.badge.ok{background:#dff3e3;color:#1b5e20}.badge.no{background:#fde2e1;color:#8a1c12}
.pred,.prov{color:#666;font-size:.85rem}
table.kv,table.md{border-collapse:collapse;margin:.4rem 0}
table.kv th,table.kv td,table.md th,table.md td{border-bottom:1px solid #eee;padding:.2rem .8rem .2rem 0;text-align:left}
figure.bar{margin:.5rem 0 1rem}figcaption{font-weight:600;margin-bottom:.3rem}
svg.budget{display:block;border:1px solid #ccc}
.bar-label{font:bold 15px system-ui,sans-serif;fill:#111}
.s-weights{fill:#4e79a7}.s-act{fill:#f28e2b}.s-nontorch{fill:#b07aa1}.s-graphs{fill:#59a14f}
.s-kv{fill:#edc948}.s-free{fill:#d9d9d9}.s-unknown{fill:#eeeeee}
.legend{list-style:none;padding:0;margin:.4rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1.2rem}
.sw{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-1px}
.sw.s-weights{background:#4e79a7}.sw.s-act{background:#f28e2b}.sw.s-nontorch{background:#b07aa1}
.sw.s-graphs{background:#59a14f}.sw.s-kv{background:#edc948}.sw.s-free{background:#d9d9d9}
.error{background:#fde2e1;border:1px solid #f5b5b0;padding:.6rem 1rem;border-radius:6px}
details.full{margin:1rem 0}details.full>summary{cursor:pointer;font-weight:600}
.notes li{margin:.3rem 0}
footer{color:#777;font-size:.85rem;margin-top:2rem}
"""

# Copy buttons: copy the command's text; works without network or libraries.
JS = """
document.querySelectorAll('button.copy').forEach(function(b){b.addEventListener('click',function(){
var t=document.getElementById(b.getAttribute('data-copy')).textContent;
function done(){b.textContent='Copied';setTimeout(function(){b.textContent='Copy'},1500)}
if(navigator.clipboard){navigator.clipboard.writeText(t).then(done,function(){})}else{
var r=document.createRange();r.selectNodeContents(document.getElementById(b.getAttribute('data-copy')));
var s=getSelection();s.removeAllRanges();s.addRange(r);document.execCommand('copy');done()}})});
"""


def page(nonce: str, *, text: str = "", model: str = "", gpu: str = "", vllm_version: str = "",
         answer: str = "") -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>kvdoctor — explain a vLLM GPU-memory error</title>
<style nonce="{nonce}">{CSS}</style></head>
<body><main>
<h1>kvdoctor — explain a vLLM GPU-memory / KV-cache error</h1>
<p>Paste the error or the startup log vLLM printed (the whole traceback and the <code>vllm serve</code>
command line help). The answer uses vLLM's own arithmetic and says which numbers were read from your
paste, derived, or assumed. Nothing you paste is stored.</p>
{answer}
<form method="post" action="/explain" id="paste-form">
<label for="text">Error or log</label>
<textarea id="text" name="text" required spellcheck="false" placeholder="ValueError: The model's max seq len (…) is larger than the maximum number of tokens that can be stored in KV cache (…)">{_e(text)}</textarea>
<div class="row">
<div><label for="model">Model (optional)</label><input type="text" id="model" name="model" value="{_e(model)}" placeholder="Qwen/Qwen2.5-14B-Instruct-1M" maxlength="{FIELD_MAX}"></div>
<div><label for="gpu">GPU (optional)</label><input type="text" id="gpu" name="gpu" value="{_e(gpu)}" placeholder="RTX A6000, 24GB, H100 SXM" maxlength="{FIELD_MAX}"></div>
<div><label for="vllm_version">vLLM version (optional)</label><input type="text" id="vllm_version" name="vllm_version" value="{_e(vllm_version)}" placeholder="0.8.5" maxlength="{FIELD_MAX}"></div>
</div>
<button type="submit" id="submit">Explain</button>
</form>
<footer>kvdoctor · also as <code>POST /api/explain</code> and <code>POST /api/estimate</code> (JSON)</footer>
</main><script nonce="{nonce}">{JS}</script></body></html>"""


def answer_html(result: dict | None, reply_md: str) -> str:
    """The answer block for one diagnosis (`result` = Diagnosis.to_json(), `reply_md` its reply)."""
    if result is None:
        return ('<section class="answer" id="answer"><h2>No vLLM memory error found</h2>'
                "<p>kvdoctor did not find a vLLM GPU-memory or KV-cache problem in this text. Paste the "
                "error message with its traceback, or the startup log lines about memory "
                "(<code>model weights take</code>, <code>GPU KV cache size</code>, <code>Maximum concurrency</code>).</p>"
                "</section>")
    diagnosis = result.get("diagnosis") or {}
    facts = {k: v for k, v in (result.get("facts") or {}).items() if k != "error_kind"}
    kind = diagnosis.get("error_kind")
    summary = diagnosis.get("summary") or ""
    notes = [n for n in diagnosis.get("notes") or [] if isinstance(n, str) and n]
    missing = [m for m in diagnosis.get("missing") or [] if isinstance(m, str) and m]
    facts_html = _value_table(facts, "read from your paste")
    parts = [
        '<section class="answer" id="answer">',
        f'<h2>What happened{f" <code>{_e(kind)}</code>" if kind else ""}</h2>',
        f'<div class="summary">{markdown_to_html(summary or reply_md)}</div>',
    ]
    if notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{_inline(_e(n))}</li>" for n in notes) + "</ul>")
    parts.append(f"<h2>Where the GPU memory went</h2>{budget_svg(result)}")
    parts.append(fixes_html(diagnosis.get("suggestions") or []))
    if missing:
        parts.append("<h2>To be more precise, paste</h2><ul>"
                     + "".join(f"<li>{_inline(_e(m))}</li>" for m in missing) + "</ul>")
    if summary and reply_md and reply_md.strip() != summary.strip():
        parts.append('<details class="full"><summary>The whole explanation, with every figure and where it '
                     f'came from</summary><div class="reply">{markdown_to_html(reply_md)}</div></details>')
    if facts_html:
        parts.append(f"<h2>Read from your paste</h2>{facts_html}")
    parts.append("</section>")
    return "".join(parts)


def error_html(message: str) -> str:
    return f'<section class="answer error" id="answer"><p>{_e(message)}</p></section>'


def _html(body: str, nonce: str, status: int = 200, headers: dict | None = None) -> HTMLResponse:
    csp = (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src data:; "
           "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
    h = {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cache-Control": "no-store",
    }
    h.update(headers or {})
    return HTMLResponse(body, status_code=status, headers=h)


def _json(data: Any, status: int = 200, headers: dict | None = None) -> Response:
    body = json.dumps(data, default=str, ensure_ascii=False).encode("utf-8")
    h = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    h.update(headers or {})
    return Response(body, status_code=status, media_type="application/json", headers=h)


# =============================================================================================
# Input
# =============================================================================================
class BadRequest(Exception):
    """A malformed request; the message is shown to the user."""


def _field(data: dict, name: str, *, required: bool = False, limit: int = FIELD_MAX) -> str | None:
    value = data.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadRequest(f'"{name}" is required')
        return None
    if not isinstance(value, str):
        raise BadRequest(f'"{name}" must be a string')
    if len(value) > limit:
        raise BadRequest(f'"{name}" is too long (at most {limit:,} characters)')
    return value.strip() if name != "text" else value


def _explain_args(data: dict, max_text: int) -> dict:
    return {
        "text": _field(data, "text", required=True, limit=max_text),
        "model": _field(data, "model"),
        "gpu": _field(data, "gpu"),
        "vllm_version": _field(data, "vllm_version"),
    }


async def _json_body(request: Request, limit: int) -> dict:
    raw = await read_body(request, limit)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRequest("the body must be a JSON object (UTF-8)") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    return data


# =============================================================================================
# Routes
# =============================================================================================
def web_routes(settings: Settings, store: Store | None = None) -> list[BaseRoute]:
    """The page and the JSON API. `store` is unused today (nothing a visitor pastes is kept)."""
    limiter = RateLimiter(settings.rate_limit_per_minute)
    limit = settings.max_body_bytes
    offline = settings.offline

    def limited(request: Request) -> float | None:
        """Seconds to wait when this client is over its rate, else None."""
        allowed, wait = limiter.allow(client_ip(request))
        if allowed:
            return None
        metrics.record_error("rate_limited")
        return wait

    async def index(request: Request) -> Response:
        return _page_response()

    def _page_response(status: int = 200, headers: dict | None = None, **kw: Any) -> Response:
        nonce = secrets.token_urlsafe(16)
        return _html(page(nonce, **kw), nonce, status=status, headers=headers)

    async def explain_form(request: Request) -> Response:
        wait = limited(request)
        if wait is not None:
            return _page_response(429, {"Retry-After": str(max(1, round(wait)))},
                                  answer=error_html(f"Too many requests from your address: try again in {max(1, round(wait))} s."))
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            raw = await read_body(request, limit)
        except TooLarge:
            metrics.record_error("too_large")
            return _page_response(413, answer=error_html(f"That paste is too large (over {limit:,} bytes). "
                                                         "Paste the error and the memory lines of the log."))
        if ctype != "application/x-www-form-urlencoded":
            metrics.record_error("bad_input")
            return _page_response(415, answer=error_html("Send the form as application/x-www-form-urlencoded."))
        try:
            form = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode("utf-8"), keep_blank_values=True,
                                                               max_num_fields=20).items()}
            args = _explain_args(form, limit)
        except (UnicodeDecodeError, ValueError):
            metrics.record_error("bad_input")
            return _page_response(400, answer=error_html("The form could not be read (not UTF-8, or too many fields)."))
        except BadRequest as exc:
            metrics.record_error("bad_input")
            keep = {k: form.get(k, "") if isinstance(form.get(k), str) else "" for k in ("text", "model", "gpu", "vllm_version")}
            return _page_response(400, answer=error_html(str(exc)), **keep)
        keep = {k: v or "" for k, v in args.items()}
        try:
            diag = await run_in_threadpool(_diagnose, args["text"], args["model"], args["gpu"],
                                           args["vllm_version"], offline, settings.hub_timeout)
            result = await run_in_threadpool(diag.to_json) if diag is not None else None
            reply_md = ""
            if result is not None:
                reply_md = result.get("reply") if isinstance(result.get("reply"), str) else await run_in_threadpool(_markdown, diag)
        except Exception as exc:  # KvdoctorError: user-facing sentence; anything else: logged
            status, message = _failure(exc)
            return _page_response(status, answer=message, **keep)
        if result is not None:
            metrics.record_reply("web")
        return _page_response(answer=answer_html(result, reply_md), **keep)

    def _failure(exc: Exception) -> tuple[int, str]:
        from estimator import KvdoctorError

        if isinstance(exc, KvdoctorError):
            metrics.record_error("bad_input")
            return 400, error_html(str(exc))
        metrics.record_error("internal")
        log.error("web explain failed", exc_info=exc)
        return 500, error_html("Something went wrong on our side while explaining this paste; it was logged.")

    async def _api_input(request: Request, parse) -> tuple[object, Response | None]:
        """Rate limit, body size limit and validation, shared by the JSON API routes."""
        wait = limited(request)
        if wait is not None:
            return None, _json({"error": "rate limited: too many requests from your address"}, 429,
                               {"Retry-After": str(max(1, round(wait)))})
        try:
            return parse(await _json_body(request, limit)), None
        except TooLarge:
            metrics.record_error("too_large")
            return None, _json({"error": f"request body over {limit:,} bytes"}, 413)
        except BadRequest as exc:
            metrics.record_error("bad_input")
            return None, _json({"error": str(exc)}, 400)

    async def api_explain(request: Request) -> Response:
        args, refused = await _api_input(request, lambda body: _explain_args(body, limit))
        if refused is not None:
            return refused
        try:
            diag = await run_in_threadpool(_diagnose, args["text"], args["model"], args["gpu"],
                                           args["vllm_version"], offline, settings.hub_timeout)
        except Exception as exc:
            return _api_failure(exc)
        if diag is None:
            return _json({"facts": None, "derived": None, "diagnosis": None, "estimate": None, "reply": None,
                          "message": "no vLLM GPU-memory or KV-cache problem found in this text"})
        metrics.record_reply("api")
        return _json(diag.to_json())

    async def api_estimate(request: Request) -> Response:
        kwargs, refused = await _api_input(request, estimate_args)
        if refused is not None:
            return refused
        try:
            import estimator

            estimate_json = estimator.estimate_json
        except (ImportError, AttributeError):
            metrics.record_error("not_implemented")
            return _json({"error": "estimates are not available in this build"}, 501)
        try:
            with metrics.estimator_timer("api", "estimate"):
                result = await run_in_threadpool(lambda: estimate_json(**kwargs, offline=offline or None))
        except Exception as exc:
            return _api_failure(exc)
        metrics.record_reply("api")
        return _json(result)

    def _api_failure(exc: Exception) -> Response:
        from estimator import KvdoctorError

        if isinstance(exc, KvdoctorError):
            metrics.record_error("bad_input")
            return _json({"error": str(exc)}, 400)
        metrics.record_error("internal")
        log.error("api call failed", exc_info=exc)
        return _json({"error": "internal error (logged)"}, 500)

    return [
        Route("/", index, methods=["GET"]),
        Route("/explain", explain_form, methods=["POST"]),
        Route("/api/explain", api_explain, methods=["POST"]),
        Route("/api/estimate", api_estimate, methods=["POST"]),
    ]


def estimate_args(data: dict) -> dict:
    """`estimate_json` keyword arguments from a POST /api/estimate body.

    Settings may come under "settings" or at the top level (as design.md §4 names them);
    anything else is refused with the list of accepted names, so a typo is not silently ignored.
    """
    allowed_top = {"model", "gpu", "gpu_count", "settings", *ESTIMATE_SETTINGS}
    unknown = sorted(set(data) - allowed_top)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; accepted: model, gpu, gpu_count, settings, "
                         + ", ".join(ESTIMATE_SETTINGS))
    model = _field(data, "model", required=True)
    gpu = _field(data, "gpu")
    gpu_count = data.get("gpu_count")
    if gpu_count is not None and (isinstance(gpu_count, bool) or not isinstance(gpu_count, int)
                                  or not 1 <= gpu_count <= 1024):
        raise BadRequest('"gpu_count" must be a whole number from 1 to 1024')
    nested = data.get("settings")
    nested = {} if nested is None else nested
    if not isinstance(nested, dict):
        raise BadRequest('"settings" must be an object')
    unknown = sorted(set(nested) - set(ESTIMATE_SETTINGS))
    if unknown:
        raise BadRequest(f"unknown setting(s) {', '.join(unknown)}; accepted: " + ", ".join(ESTIMATE_SETTINGS))
    settings = {k: data[k] for k in ESTIMATE_SETTINGS if k in data}
    for k, v in nested.items():
        if k in settings and settings[k] != v:
            raise BadRequest(f'"{k}" is given twice with different values')
        settings[k] = v
    for k, v in settings.items():
        if v is not None and not isinstance(v, str | int | float | bool):
            raise BadRequest(f'setting "{k}" must be a string, number or boolean')
    args: dict[str, Any] = {"model": model, "gpu": gpu, "settings": settings}
    if gpu_count is not None:
        args["gpu_count"] = gpu_count
    return args
