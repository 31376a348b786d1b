"""The reply: markdown (CLI, Discourse), Slack Block Kit, plain text, and the estimate table.

Why one renderer: every surface must say the same numbers the same way — short answer first,
then where every GiB went (read / derived / estimated / assumed), the KV formula with the
user's numbers, ready-to-paste fixes with their re-checked effect, and what to paste next.
Units: GiB (2^30) as vLLM prints them; GB vs GiB said explicitly. Secrets are redacted.
"""

from __future__ import annotations

import html
import re

import regex

from estimator.advice import condition_of
from estimator.derive import first_group_only
from estimator.kv_layout import mamba_align_refused
from estimator.memory import Estimate, graphs_captured_after_kv
from estimator.units import HALF_HUNDREDTH, GiB

# Tokens people paste by accident (HF, Slack, OpenAI-style keys, bearer tokens, AWS keys).
SECRET_SHAPES = regex.compile(
    r"(hf_[A-Za-z0-9]{8,}|xox[abposre]-[A-Za-z0-9-]{8,}|xapp-[A-Za-z0-9-]{8,}|sk-[A-Za-z0-9_-]{12,}"
    r"|(?<=(?i:bearer)\s)[A-Za-z0-9._~+/=-]{8,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{20,})"
)
SLACK_SECTION_LIMIT = 3000
SLACK_MAX_BLOCKS = 50

_LABEL = {"read": "read", "derived": "derived", "estimated": "estimated", "assumed": "assumed"}
_ROWS = (
    ("total", "GPU memory (torch)"),
    ("budget", "vLLM budget (total × utilization)"),
    ("weights", "Model weights"),
    ("activation", "Activation peak (profile run)"),
    ("non_torch", "Non-torch (cuBLAS, NCCL…)"),
    ("consumed", "Weights + non-torch (vLLM's consumed memory)"),
    ("cuda_graphs", "CUDA graphs"),
    ("warmup_reserve", "Kept free after warmup (0.34+)"),
    ("non_kv", "Everything but KV"),
    ("reserved_pool", "Profile run's KV pool (before warmup)"),
    ("kv_pool", "KV cache pool"),
    ("kv_needed", "KV needed for max_model_len"),
    ("oom_request", "Allocation that failed (OOM)"),
    ("oom_free", "Free when it failed"),
    ("oom_allocated", "Allocated by PyTorch at the OOM"),
    ("free_at_start", "Free at start-up"),
    ("held_by_others", "Held by other processes at start-up"),
)


# What sits outside torch's allocator is the vendor's libraries: ROCm's hipBLAS and RCCL, Intel's oneDNN and oneCCL,
# Huawei's CANN and HCCL
_NON_TORCH_BY_VENDOR = {"AMD": "Non-torch (hipBLAS, RCCL…)", "Intel": "Non-torch (oneDNN, oneCCL…)",
                        "Huawei": "Non-torch (CANN, HCCL…)"}


def _vendor(diag) -> str:
    """The card's vendor as the catalog has it ("" when the card is not a catalog row)."""
    from estimator.errors import KvdoctorError
    from estimator.gpus import lookup_gpu

    name = ((diag.estimate or {}).get("gpu") or {}).get("name") if isinstance(diag.estimate, dict) else None
    if not name:
        return ""
    try:
        return lookup_gpu(str(name)).vendor
    except KvdoctorError:
        return ""


def redact(text: str) -> str:
    try:
        return SECRET_SHAPES.sub("[redacted]", text or "", timeout=1.0)
    except TimeoutError:
        return "[reply withheld: could not check it for secrets]"


def g(x: float | None, nd: int = 2) -> str:
    return "—" if x is None else f"{x / GiB:,.{nd}f}"


def breakdown_rows(diag) -> list[tuple[str, str, str, str]]:
    """(label, GiB, provenance, how) for each figure the diagnosis has."""
    st = diag.state
    rows = []
    if st is None:
        return rows
    for key, label in _ROWS:
        f = st.figures.get(key)
        if f is None or f.value is None:
            continue
        if key == "non_torch":
            label = _NON_TORCH_BY_VENDOR.get(_vendor(diag), label)
        val, how = g(f.value), f.how
        if 0 < f.value < HALF_HUNDREDTH * GiB:
            val = "<0.01"      # a 2 MiB allocation that failed is no "0.00 GiB"
        if f.low is not None and f.high is not None and f.high - f.low > HALF_HUNDREDTH * GiB \
                and f"{f.low / GiB:.2f}" != f"{f.high / GiB:.2f}":
            val = f"{f.low / GiB:.2f}–{f.high / GiB:.2f}"      # not "3.59–3.59": ends that round alike are one figure
        if key == "kv_pool" and f.value < 0:
            # vLLM clamps to 0 blocks; the negative figure is how far the rest overran the budget.
            val, how = "0.00", f"{how}: the rest of the memory overruns the budget by {-f.value / GiB:.2f} GiB"
        if key == "non_kv" and f.value < 0:
            # vLLM's pool is larger than the assumed budget: no real memory is negative, the budget
            # (card size or utilization) is what is off, as the checks say
            val, how = "—", (f"the KV pool is {-f.value / GiB:.2f} GiB larger than the assumed budget: the card "
                             "or the utilization is not what was assumed (see the checks)")
        rows.append((label, val, _LABEL.get(f.provenance, f.provenance), how))
    return rows


def render_markdown(diag, *, flavour: str = "cli") -> str:
    out = [redact(diag.summary), ""]
    rows = breakdown_rows(diag)
    body: list[str] = []
    if rows:
        stages = ((diag.estimate or {}).get("gpu") or {}).get("stages")
        scope = (f"on the tightest pipeline stage, {diag.estimate['gpu']['name']}, whose block count every "
                 "stage gets" if stages else "per GPU")
        body += [f"**Where the memory went** ({scope}; GiB = 2^30 bytes, as vLLM prints it; 1 GiB = 1.074 GB)", "",
                 "| | GiB | source | how |", "|---|---:|---|---|"]
        body += [f"| {a} | {b} | {c} | {_md(d)} |" for a, b, c, d in rows]
        body.append("")
    if diag.kv_formula:
        body += [f"**KV cache per token:** {diag.kv_formula}", ""]
    for line in diag.notes:
        body.append(f"- {redact(line)}")
    if diag.notes:
        body.append("")
    unchecked: list[str] = []
    if diag.unchecked:
        unchecked.append(diag.unchecked_header or (
                         "**From vLLM's own numbers** (the model's state disagrees with them, see Checks):"
                         if diag.disagrees else
                         "**Fixes** (settings vLLM accepts; each still has to fit in memory):"
                         if diag.settings_error else
                         "**Likely fixes** (from the numbers vLLM printed; not re-checked until I have the model's config):"
                         if diag.estimate is None else
                         "**Likely fixes on these GPUs** (from the numbers vLLM printed; not re-checked: the fixes "
                         "above need more GPUs, and the model's own estimate leaves no room for these):"
                         if diag.suggestions else
                         "**Likely fixes** (from the numbers vLLM printed; not re-checked: no change kvdoctor "
                         "re-checks makes these settings fit):"))
        unchecked.append("")
        for u in diag.unchecked:
            unchecked.append(f"- {'`' + u['flags'] + '` — ' if u['flags'] else ''}{u['why']}")
        unchecked.append("")
    if diag.disagrees:
        body += unchecked
    if diag.suggestions:
        body.append("**Fixes** (each re-checked with vLLM's arithmetic"
                    + (" on the model's own state):" if diag.disagrees else "):"))
        body.append("")
        for i, s in enumerate(diag.suggestions, 1):
            body.append(f"{i}. `{s['flags']}` → {_effect(s)} — {s['why']}")
            if s.get("command"):        # none where the tool that started vLLM has no argument for it
                command = "\n".join("   " + line for line in str(s["command"]).splitlines())
                body.append(f"   ```\n{command}\n   ```")
        body.append("")
    if not diag.disagrees:
        body += unchecked
    if diag.full_context:
        body += [f"**To serve the whole context:** {diag.full_context}", ""]
    if diag.four_bit:
        body += [f"**With a 4-bit checkpoint:** {diag.four_bit}.", ""]
    if diag.checks:
        body += ["**Checks:** " + " ".join(_sentence(c) for c in diag.checks), ""]
    if diag.missing:
        body += ["**To be more precise, paste:** " + "; ".join(diag.missing) + ".", ""]
    if diag.assumptions:
        body += ["Assumptions: " + "; ".join(diag.assumptions[:8]) + "."]
    text = "\n".join(body)
    if flavour == "discourse" and rows:
        text = "[details=\"Full breakdown\"]\n" + text + "\n[/details]"
    return redact("\n".join(out) + "\n" + text).strip() + "\n"


def _md(text: str) -> str:
    return (text or "").replace("|", "\\|")


def _effect(s: dict) -> str:
    fits = "fits" if s.get("fits") else "does not fit"
    conc = s.get("max_concurrency")
    tok = s.get("kv_cache_tokens")
    extra = f", KV cache {tok:,} tokens" if tok is not None else ""
    if conc is not None:
        extra += f", {conc:.2f}× concurrency at {s.get('max_model_len', 0):,} tokens"
    return fits + extra


def render_text(diag) -> str:
    md = render_markdown(diag)
    return re.sub(r"[*`]", "", md)


def render_slack(diag) -> dict:
    """Block Kit within Slack's limits (≤50 blocks, ≤3000 chars per section) + text fallback."""
    blocks: list[dict] = []

    def section(text: str) -> None:
        text = redact(text)
        while text:
            chunk, text = text[:SLACK_SECTION_LIMIT], text[SLACK_SECTION_LIMIT:]
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": chunk}})

    section(_slack(diag.summary))
    rows = breakdown_rows(diag)
    if rows:
        width = max(len(r[0]) for r in rows)
        table = "\n".join(f"{a:<{width}}  {b:>13}  {c}" for a, b, c, _ in rows)
        section("*Where the memory went* (per GPU, GiB = 2^30 bytes)\n```" + table + "```")
    if diag.kv_formula:
        section("*KV per token:* " + diag.kv_formula)
    if diag.notes:       # GB vs GiB, per-GPU figures, what another worker's line means …
        section("\n".join(f"• {_slack(n)}" for n in diag.notes[:4]))
    if diag.checks:      # where vLLM's numbers and the model disagree: Slack readers need it as much
        section("*Checks:* " + " ".join(_sentence(c) for c in diag.checks))
    disagrees = diag.disagrees
    lead = ("*From vLLM's own numbers:* " if disagrees else
            "*Fix* (a setting vLLM accepts): " if diag.settings_error else "*Likely fix* (not re-checked): ")
    unchecked = [lead
                 + (f"`{u['flags']}` — " if u["flags"] else "") + u["why"] for u in diag.unchecked[:4]]
    for text in unchecked if disagrees else []:
        section(text)
    for i, s in enumerate(diag.suggestions[:8], 1):
        section(f"*{i}.* `{s['flags']}` → {_effect(s)}\n_{s['why']}_" + (f"\n```{s['command']}```" if s.get("command") else ""))
    for text in [] if disagrees else unchecked:
        section(text)
    if diag.full_context:
        section("*To serve the whole context:* " + diag.full_context)
    if diag.four_bit:
        section("*With a 4-bit checkpoint:* " + diag.four_bit + ".")
    if diag.missing:
        section("*To be more precise, paste:* " + "; ".join(diag.missing))
    if diag.assumptions:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": redact("Assumptions: " + "; ".join(diag.assumptions[:5]))[:2000]}]})
    blocks = blocks[:SLACK_MAX_BLOCKS]
    return {"text": redact(_slack(diag.summary))[:3000], "blocks": blocks}


def _slack(md: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"*\1*", md or "")


def _graph_row_label(est: Estimate) -> str:
    """'CUDA graphs', or why the budget holds none although vLLM captures them (V2 before 0.29)."""
    return "CUDA graphs (captured after KV)" if graphs_captured_after_kv(est) else "CUDA graphs"


def align_refusal(est: Estimate) -> str:
    """Why vLLM refuses a hybrid model's settings before sizing memory (kv_layout.mamba_align_refused)."""
    return (f"with prefix caching (Mamba cache 'align' mode) the batch ({est.settings.max_num_batched_tokens:,} "
            f"tokens) must hold the {est.layout.block_size:,}-token attention block")


def estimate_text(est: Estimate, four_bit: Estimate | None = None) -> str:
    """The readable table `kvdoctor estimate` prints by default; `four_bit`, the run with a 4-bit export of
    the model where no fix serves it on the GPUs it has (advice.four_bit_checkpoint)."""
    s, m = est.settings, est
    stages = est.inputs.get("stage_gpus")
    where = f"{est.gpu_count}× {est.gpu_name}"
    per = "per GPU"
    if stages:
        where = " + ".join(n for n, _t in stages) + " (pipeline stages)"
        per = f"{est.gpu_name} stage (tightest)"
    lines = [
        f"{est.spec.model_id} on {where} — vLLM {s.vllm_version} ({est.profile.era})",
        f"KV per token ({per}): {est.layout.kv_bytes_per_token:,} B;  block size {est.layout.block_size}",
        "",
        f"{per:<34}{'GiB':>10}",
        f"{'total memory (torch)':<34}{g(est.gpu_total_bytes):>10}",
        f"{'budget (× ' + str(s.gpu_memory_utilization) + ')':<34}{g(m.budget_bytes):>10}",
        f"{'weights':<34}{g(m.weights_bytes):>10}",
        f"{'activation peak (estimate)':<34}{g(m.activation_bytes):>10}",
        f"{'non-torch (estimate)':<34}{g(m.non_torch_bytes):>10}",
        f"{_graph_row_label(est):<34}{g(m.cuda_graph_bytes):>10}",
        f"{'KV cache':<34}{g(m.kv_cache_bytes):>10}",
        "",
        f"GPU blocks: {est.gpu_blocks:,};  KV cache: {est.kv_cache_tokens:,} tokens;  "
        f"max concurrency at {est.max_model_len:,}: {est.max_concurrency:.2f}×",
        f"max_model_len {est.max_model_len:,}: {'fits' if est.fits else 'DOES NOT FIT'} "
        + (f"(needs {g(est.kv_needed_bytes)} GiB of the {g(m.kv_cache_bytes)} GiB KV cache)" if est.fits else
           f"(largest that fits: {est.max_model_len_fit:,}; needs {g(est.kv_needed_bytes)} GiB of KV)"),
    ]
    first_only = first_group_only(est)
    if first_only:
        lines.append(f"  — {first_only}")
    if not est.fits and est.error_kind == "max_model_len_derived":
        lines.append("  — longer than the model's config allows: vLLM refuses the length before it looks at memory")
    if not est.fits and mamba_align_refused(est.layout, s, est.profile):
        lines.append(f"  — vLLM refuses the settings first: {align_refusal(est)}")
    if not est.fits and est.error_kind == "mamba_blocks":
        # the length fits; what fails is one Mamba state block per running sequence (vLLM's check)
        lines.append(f"  — max_num_seqs {s.max_num_seqs:,} is more than the {est.gpu_blocks:,} cache blocks: each running "
                     "sequence holds a Mamba state block")
    if est.suggestions:
        # the list gives no reasons, only the conditions a fix puts on the user (more GPUs than given)
        lines += ["", "Fixes:"] + [f"  {x['flags']:<48} → {_effect(x)}" + (f" ({c})" if (c := condition_of(x)) else "")
                                   for x in est.suggestions]
    if four_bit is not None:
        tp = four_bit.settings.tensor_parallel_size
        what = "a 4-bit AWQ/GPTQ checkpoint" + (f", --tensor-parallel-size {tp}" if tp != s.tensor_parallel_size else "")
        effect = _effect({"fits": True, "kv_cache_tokens": four_bit.kv_cache_tokens, "max_model_len": four_bit.max_model_len,
                          "max_concurrency": four_bit.max_concurrency})
        lines += ["", "With a 4-bit checkpoint (not a flag: another checkpoint of the model):",
                  f"  {what:<48} → {effect} (weights {four_bit.weights_bytes / GiB:.2f} GiB per GPU)"]
    if est.assumptions:
        lines += ["", "Assumptions:"] + [f"  - {a}" for a in est.assumptions]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# HTML (the web page shows the markdown reply; nothing in it may become markup)
# ------------------------------------------------------------------------------------------


def _esc(value) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


_HTML_RE_TIMEOUT = 0.5
_CODE = regex.compile(r"`([^`\n]+)`")
_BOLD = regex.compile(r"\*\*([^*\n]+)\*\*")
_LIST = regex.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*)$")
_HEADING = regex.compile(r"^(#{1,6})\s+(.*)$")
_TABLE_RULE = regex.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def inline_markdown(escaped: str) -> str:
    """Inline markdown on already-escaped text: `code` and **bold** (no links, no raw HTML)."""
    try:
        escaped = _CODE.sub(r"<code>\1</code>", escaped, timeout=_HTML_RE_TIMEOUT)
        return _BOLD.sub(r"<strong>\1</strong>", escaped, timeout=_HTML_RE_TIMEOUT)
    except TimeoutError:
        return escaped


def markdown_to_html(md: str) -> str:
    """A safe subset of markdown (paragraphs, lists, headings, fences, pipe tables, code, bold).

    The text is escaped first and only our own tags are added, so nothing in it can become
    markup; links are shown as text.
    """
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    rows: list[list[str]] = []
    lines = (md or "").replace("\r\n", "\n").split("\n")

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(inline_markdown(_esc(x)) for x in para) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{inline_markdown(_esc(x))}</li>" for x in items) + "</ul>")
            items.clear()
        if rows:
            head, *body = rows
            cells = "".join(f"<th>{inline_markdown(_esc(c))}</th>" for c in head)
            body_html = "".join("<tr>" + "".join(f"<td>{inline_markdown(_esc(c))}</td>" for c in r) + "</tr>" for r in body)
            out.append(f'<table class="md"><thead><tr>{cells}</tr></thead><tbody>{body_html}</tbody></table>')
            rows.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            block: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                block.append(lines[i])
                i += 1
            out.append(f"<pre><code>{_esc(chr(10).join(block))}</code></pre>")
        elif not stripped:
            flush()
        elif stripped.startswith("|"):
            if para or items:
                flush()
            if not _TABLE_RULE.match(stripped, timeout=_HTML_RE_TIMEOUT):
                rows.append([c.strip() for c in stripped.strip("|").split("|")])
        elif m := _HEADING.match(stripped, timeout=_HTML_RE_TIMEOUT):
            flush()
            level = min(6, len(m.group(1)) + 2)
            out.append(f"<h{level}>{inline_markdown(_esc(m.group(2)))}</h{level}>")
        elif m := _LIST.match(line, timeout=_HTML_RE_TIMEOUT):
            if para or rows:
                flush()
            items.append(m.group(1))
        else:
            if items or rows:
                flush()
            para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


def _sentence(text: str) -> str:
    """A check as a sentence of its own: capitalised, closed with a full stop."""
    text = text.strip()
    if not text:
        return text
    if not text.startswith(("vLLM", "kvdoctor")):
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
