"""Which vLLM release to model when the paste does not say, or says it loosely.

A paste rarely names its release, and the arithmetic differs from release to release. The choice,
and the words that say why: a series ("0.8.x") is its newest release by the post's date; a build
of main ("0.1.dev19754+g3a0914114") the release it became; an unnamed one the newest that the
paste's message formats and date allow (V0 logs at the last V0-default release); a release that
could not have run the model gives way to the nearest that could; and a printed KV need that only
an older release's arithmetic gives picks that release. Used by `diagnose` and the accuracy bench.
"""

from __future__ import annotations

from datetime import date

from estimator.errors import KvdoctorError
from estimator.memory import Estimate
from estimator.params import weight_format_kind
from estimator.units import PRINTED_SLACK, GiB
from estimator.vllm import (
    NEWEST,
    RELEASES,
    V0_REMOVED_FROM,
    branched_build_note,
    branched_release,
    build_name,
    is_main_build,
    iso_day,
    last_release_before,
    parse_version,
    registry_span,
    release_after,
    release_at,
    release_day,
    release_serving,
    removed_quant_method,
    series_release,
    version_text,
)

V0_ASSUMED = "0.7.3"  # newest release whose default engine was V0 (docs era table)


def modelled_version(stated: str | None, hint, engine: str | None,
                     posted: str | None = None) -> tuple[str | None, str]:
    """(version to model, why) from the version the paste states, its message formats (`hint`)
    and its date. A build of main has no version of its own: its date says which release it became."""
    series = series_release(stated, posted)
    if series:
        return series, (f"vLLM {str(stated).strip()} names a series: modelled as {series}, its newest release"
                        + (f" by the post's date ({str(posted)[:10]})" if posted else ""))
    became = release_after(posted) if stated and is_main_build(stated) else None
    if became:
        return became, (f"vLLM {stated} is a build of main (no release number); posted {str(posted)[:10]}, "
                        f"it is modelled as the next release, {became}")
    if stated and is_main_build(stated):
        return NEWEST, (f"vLLM {stated} is a build of main (no release number) and the paste has no date: "
                        f"modelled as the newest release, {NEWEST} (a date — the post's, or --posted — places it)")
    base = branched_release(stated)
    if base:
        return base, branched_build_note(build_name(stated), base)
    if stated:
        return stated, ""
    return assumed_version(hint, engine, posted)


def release_from_need(facts, est: Estimate, assumed: str, run) -> tuple[Estimate, str] | None:
    """When the paste names no release, what vLLM printed of one request's KV can date it: how a
    windowed cache counts the tokens in flight (one batch to 0.25, two from 0.26), or DeepSeek-V4's pool
    rules, changed from release to release. The printed need ("X GiB KV cache is needed") tests that
    directly; a V1 start-up log tests it through the "GPU KV cache size" it printed for its pool (from
    0.21 the pool's concurrency × max_model_len, before that its blocks per group). If the assumed
    release disagrees beyond the printed figures' rounding, the newest older V1 release (down to the
    oldest the message format allows) whose arithmetic gives vLLM's figure is modelled instead; None
    when none does (or nothing to fix)."""
    if est.profile.engine != "v1" or not est.layout.groups:
        return None
    agrees, figure = _printed_test(facts, est)
    if agrees is None or agrees(est):
        return None
    hint = facts.extra.get("version_hint")
    lo = parse_version(hint[0]) if isinstance(hint, (list, tuple)) and hint and hint[0] else (0, 7, 0)
    top = parse_version(assumed)
    for name in sorted((v for v, _day in RELEASES if lo <= parse_version(v) < top), key=parse_version, reverse=True):
        if release_serving(est.spec.architecture, parse_version(name)):
            continue    # that release cannot serve the model (its registry lacks the architecture)
        try:
            other = run(name)
        except KvdoctorError:
            continue
        if agrees(other):
            return other, (f"version not stated; the {figure(other)} is vLLM {name}'s arithmetic, "
                           f"not {assumed}'s: modelled as {name}, the newest release that gives it")
    return None


def _printed_test(facts, est: Estimate):
    """(does an estimate reproduce vLLM's printed KV figure?, the words for that figure), or (None, None)
    where the paste has neither figure. The token count is tested only where the estimate holds the pool
    vLLM printed beside it (it is anchored to it), so that it depends on the layout alone; its slack is the
    pool's printed rounding, and at least 1%."""
    f = facts.get
    printed = f("kv_needed_gib")
    if printed is not None:
        return (lambda e: abs(e.kv_needed_bytes / GiB - float(printed)) <= PRINTED_SLACK,
                lambda e: f"KV need vLLM printed ({float(printed):.2f} GiB for {e.max_model_len:,} tokens)")
    tokens, pool = f("kv_tokens_capacity"), facts.printed_pool_gib
    if not tokens or not pool or float(pool) <= 0:
        return None, None
    slack = int(tokens) * max(0.01, PRINTED_SLACK / float(pool))

    def holds(e: Estimate) -> bool:
        return e.holds_pool(pool) and abs(e.kv_cache_tokens - int(tokens)) <= slack

    return holds, lambda e: f"KV cache size vLLM printed ({int(tokens):,} tokens in {float(pool):.2f} GiB)"


# How far ahead of its next release a build of main can plausibly be (release cadence is 2–6 weeks).
MAIN_BUILD_LEAD_DAYS = 90


def _days_between(a: str, b: str) -> int:
    da, db = iso_day(a), iso_day(b)
    try:
        return (date.fromisoformat(db) - date.fromisoformat(da)).days if da and db else 0
    except ValueError:
        return 0


def assumed_version(hint, engine: str | None, posted: str | None = None) -> tuple[str | None, str]:
    """The version to model when the paste does not say: the newest its message formats allow,
    except that a V0 engine is taken at 0.7.3, the last release where V0 was the default.

    `posted` (the thread's date) caps it at the newest release of that day: a post from July 2025
    did not run 0.27. When the message formats are newer than that release, the author ran a build
    of main, modelled as the oldest release with those formats."""
    lo, hi = (hint if isinstance(hint, (list, tuple)) and len(hint) == 2 else (None, None))
    then = release_at(posted)
    dated = ""
    if then and (hi is None or parse_version(then) < parse_version(hi)):
        if lo and parse_version(lo) > parse_version(then):
            first = release_day(lo)
            if first and _days_between(str(posted), first) > MAIN_BUILD_LEAD_DAYS:
                # a build of main runs weeks ahead of a release, not months: the format matched by
                # accident (a PR comment quoting "# GPU blocks: 7449" in 2023 is not V1 0.7)
                return then, (f"version not stated; the post ({str(posted)[:10]}) predates vLLM {lo}, whose "
                              f"message format the paste resembles, by months: modelled as {then}, the last "
                              "release before the post")
            return str(lo), (f"version not stated; the message format points to vLLM ≥ {lo}, newer than the "
                             f"last release before the post ({then}): modelled as {lo}")
        hi, dated = then, f" and the post's date ({str(posted)[:10]}) point"
    if engine == "v0":
        if hi and parse_version(hi) <= parse_version(V0_ASSUMED):
            span = str(hi) if lo == hi else f"{lo or '?'}–{hi}"
            return str(hi), f"version not stated; the message format{dated or ' points'} to vLLM {span}: modelled as {hi}"
        if lo and parse_version(lo) > parse_version(V0_ASSUMED):
            if dated:
                # V0 chosen on a release where V1 is the default (VLLM_USE_V1=0, or a fallback): the
                # newest release of the post's day, as for V1 — 0.8.0–0.8.2 and 0.8.3+ profile
                # multimodal models differently (vllm.V0_TEXT_ONLY_DUMMY)
                return str(hi), (f"version not stated; the V0 message format{dated} to vLLM {lo}–{hi}: "
                                 f"modelled as {hi}")
            span = str(lo) if hi == lo else f"≥ {lo}"
            return str(lo), f"version not stated; the V0 message format points to vLLM {span}: modelled as {lo}"
        return V0_ASSUMED, (f"the message format is vLLM's V0 engine; version not stated, so V0 rules of "
                            f"{V0_ASSUMED} (the last release where V0 was the default)")
    if hi:
        return str(hi), f"version not stated; the message format{dated or ' points'} to vLLM ≤ {hi}: modelled as {hi}"
    return None, ""


def loadable_release(spec, settings, formats=None) -> str | None:
    """When the paste does not name its release and the one assumed cannot have run it, the paste's
    own vLLM could: model the nearest release that can. A release that cannot load the checkpoint's
    format (GGUF left vLLM in 0.24, bitsandbytes in 0.28) gives way to the last one before; one whose
    model registry lacks the architecture to the first (or, for a dropped model, the last) that lists
    it — a post from before that release ran a build of main — unless the paste's message formats
    (`formats`, the reader's version hint: lowest, highest) rule that release out: then the run went
    through something kvdoctor does not see (the Transformers backend), and the estimate says the
    release does not list the model. Sets the settings' version; returns the note that says so."""
    removed = removed_quant_method(weight_format_kind(spec, settings.quantization),
                                   parse_version(settings.vllm_version))
    before = last_release_before(removed[1]) if removed else None
    if before:
        settings.vllm_version = before
        return (f"version not stated; vLLM ran these {removed[0]} weights, which releases from "
                f"{version_text(removed[1])} cannot load: modelled as {before}, the last release before")
    assumed = parse_version(settings.vllm_version)
    nearest = release_serving(spec.architecture, assumed)
    if not nearest or (settings.engine == "v0" and parse_version(nearest) >= V0_REMOVED_FROM):
        return None     # a V0 log of a model that only V1-only releases list: the log's engine is the better evidence
    lo, hi = formats if isinstance(formats, (list, tuple)) and len(formats) == 2 else (None, None)
    if (lo and parse_version(nearest) < parse_version(lo)) or (hi and parse_version(nearest) > parse_version(hi)):
        return None
    settings.vllm_version = nearest
    first, last = registry_span(spec.architecture)
    if parse_version(nearest) > assumed:
        return (f"version not stated; vLLM's model registry lists {spec.architecture} from {first}: modelled as "
                f"{first}, the first release that can serve the model")
    return (f"version not stated; vLLM's model registry lists {spec.architecture} from {first} to {last}: "
            f"modelled as {last}, the last release that served the model")
