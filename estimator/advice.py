"""Candidate fixes, each re-checked with the memory model and ranked.

Why re-check: a fix that is not run through the same arithmetic is a guess. Every suggestion
here is the user's settings with some flags changed, evaluated by `memory.rerun`; only
suggestions that fit are returned (a lever that helps but does not suffice alone is combined
with the largest --max-model-len that fits under it). Wrong fixes for the error are not
offered (raising utilization does not fix a weights-load OOM).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass

from estimator.activation import SPARSE_MLA_WORKSPACE_WORDS, sparse_mla_load_buffers
from estimator.cuda_graphs import graphs_after_kv, graphs_outside_budget
from estimator.flags import flag_key, flag_takes_value, is_env_word, is_flag_word
from estimator.gpus import WINDOWS_HOLDERS, cards_near, cc_number, find_gpu, sized_gpu
from estimator.kv_layout import mamba_align_batch, mamba_align_refused, stage_sizes, window_tokens
from estimator.memory import Estimate, length_over_config, rerun
from estimator.multimodal_profile import vision_encoder_peak, vision_tower_skipped
from estimator.paste import CONFIG_ERRORS
from estimator.units import HALF_HUNDREDTH, GiB
from estimator.vllm import (
    BNB_MOE_FROM,
    EXTENSIBLE_UTILIZATION,
    GRAPH_PROFILING_ENV_FROM,
    ONLINE_QUANT_METHODS,
    QUANT_METHOD_REMOVED,
    SPECULATIVE_CONFIG_FROM,
    ceil_div,
    extensible_kv_cache,
    graphs_budgeted,
    v0_keeps_chunked_prefill_off,
    version_text,
)

FP8_KV = "fp8"
# pipeline parallelism in the engine (vllm PR #4412, released in 0.5.1)
PIPELINE_FROM = (0, 5, 1)
# --quantization bitsandbytes (layers/quantization/bitsandbytes.py: in the 0.5.0 wheel, not in 0.4.3's), until
# 0.28 removed it (vllm.QUANT_METHOD_REMOVED)
BNB_FROM = (0, 5, 0)
BNB_MIN_CC = 7.0
# 0.6.1's config.py refuses "BitAndBytes quantization with TP or PP is not supported yet."; 0.6.2's does not
# (vllm PR #8434; the 0.6.1 and 0.6.2 wheels)
BNB_SPLIT_FROM = (0, 6, 2)
# The values --max-lora-rank takes and the first release that takes each (LoRAConfig possible_max_ranks in
# the wheels' config.py / config/lora.py: 8–64 to 0.5.4; 128 and 256 from 0.5.5; 320 and 512 from 0.8.0; 1 by
# 0.30, which an adapter never needs over 8): the smallest at or above an adapter's rank is the fix
LORA_RANK_FROM = {8: (0, 0, 0), 16: (0, 0, 0), 32: (0, 0, 0), 64: (0, 0, 0), 128: (0, 5, 5), 256: (0, 5, 5),
                  320: (0, 8, 0), 512: (0, 8, 0)}
# A 4-bit export in place of a checkpoint whose weights crowd out the KV cache (four_bit_checkpoint):
# AWQ's own dense kernel needs compute capability 7.5 (awq.py get_min_capability), its fused-MoE method
# Marlin's 8.0 (awq_marlin.py) and came with vllm#8973 — AWQMoEMethod is in the 0.6.3 wheel's
# awq_marlin.py, not in 0.6.2's
AWQ_MIN_CC, AWQ_MOE_MIN_CC, AWQ_MOE_FROM = 7.5, 8.0, (0, 6, 3)
AWQ_FROM = (0, 2, 0)        # layers/quantized_linear/awq.py: in the 0.2.0 wheel, not in 0.1.7's
# how much smaller the export's weights must be for the swap to be worth a line: FP8 (≈ 0.55 of it) and
# 16-bit checkpoints qualify, a 4-bit or NVFP4 one does not
FOUR_BIT_SAVING = 1.6
# vLLM's --gpu-memory-utilization default to 0.19 (vllm.py's profiles; 0.92 from 0.20), which recipes,
# docs and compose files still pass: a run at 0.9 chose no room for anything else on the card
COPIED_UTILIZATION = 0.9
# The most utilization a fix asks for (but with 0.34's extensible cache): the 5% of the card it leaves
# outside vLLM's budget is where CUDA graphs captured after sizing, the sampler warm-up and the CUDA
# context of other processes live
MOST_UTILIZATION = 0.95
# Caveats that are conditions on the user, not side notes: the reply's headline repeats them with the fix
# it names (diagnosis._summary). A split over more GPUs than the user has (_gpus_caveat), and a utilization
# the user had set below the default, raised.
MORE_GPUS = "needs {n} GPUs, more than the {have} of this setup"
SHARED_CARD = "raise it only if nothing else on the card needs the memory it left"
# turning prefix caching off on a hybrid model, where vLLM's align-mode check refuses the batch
# (kv_layout.MAMBA_ALIGN_BATCH_CHECK): what it answers and what it costs
NO_ALIGN_WHY = ("without prefix caching vLLM keeps no Mamba states per block ('align' mode is off), so the batch "
                "need not hold a block")
NO_ALIGN_COST = "repeated prompts are computed again"
# what a higher utilization takes on a board whose GPU memory is the system's RAM (GB10, Jetson)
UNIFIED_RAISE = "this board's GPU memory is the system's RAM: what vLLM takes, the operating system and other processes lose"
HEADLINE_CAVEATS = re.compile(re.escape(MORE_GPUS).replace(re.escape("{n}"), r"\d+").replace(re.escape("{have}"), r"\d+")
                              + "|" + re.escape(SHARED_CARD) + "|" + re.escape(UNIFIED_RAISE))


def condition_of(fix: dict) -> str:
    """The condition a fix (Suggestion.to_json) puts on the user (HEADLINE_CAVEATS), for the short forms that
    name it without its reasons: the reply's headline, `kvdoctor estimate`'s list."""
    m = HEADLINE_CAVEATS.search(str(fix.get("why") or ""))
    return m.group(0) if m else ""


@dataclass
class Suggestion:
    flags: str
    changes: dict
    estimate: Estimate
    why: str
    keeps_goal: bool          # keeps the user's max_model_len
    caveat: str = ""
    ok: bool = True           # fits in every state it was checked in (see _check)

    @property
    def fits(self) -> bool:
        return self.estimate.fits and self.ok

    def command(self, model_id: str) -> str:
        words = self.full_flags.split()
        env = [w for w in words if is_env_word(w)]
        rest = " ".join(w for w in words if not is_env_word(w))
        # `vllm serve` came with vLLM 0.5.2 (vllm PR #5090; PR #6431 switched the docs "since v0.5.2 has
        # been released"): older releases start the same server as a module
        serve = f"vllm serve {model_id}" if self.estimate.profile.version >= (0, 5, 2) else \
            f"python -m vllm.entrypoints.openai.api_server --model {model_id}"
        return " ".join(env + [f"{serve} {rest}".strip()])

    @property
    def full_flags(self) -> str:
        """The fix's flags after the settings of the user's run it was checked with (GPU split,
        quantization, KV dtype, context length …): a bare `vllm serve MODEL --fix` would run
        another configuration than the one the predicted effect is for."""
        return " ".join(context_flags(self.estimate, set(self.changes)) + [self.flags]).strip()

    def to_json(self) -> dict:
        e = self.estimate
        return {
            "flags": self.flags,
            "command": self.command(e.spec.model_id or "MODEL"),
            "kv_cache_tokens": e.kv_cache_tokens,
            "max_concurrency": round(e.max_concurrency, 2),
            "max_model_len": e.max_model_len,
            "fits": self.fits,
            "why": self.why + (f" ({self.caveat})" if self.caveat else ""),
        }


# Settings of the user's run that a fix's command must repeat, as `vllm serve` spells them: the
# fix was checked with them, so a command without them would run another configuration.
_CONTEXT_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size",
                 "kv_cache_dtype",
                 "cpu_offload_gb", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
                 "max_num_batched_tokens", "dtype", "block_size", "kv_cache_memory_bytes", "mamba_cache_mode",
                 "mm_encoder_tp_mode", "max_loras", "max_lora_rank")
# Boolean settings repeated when the user's run set them (the V0-era `--enable-chunked-prefill False`
# is left out: off was V0's default for short contexts).
_CONTEXT_SWITCHES = (("enforce_eager", True, "--enforce-eager"),
                     ("enable_chunked_prefill", True, "--enable-chunked-prefill"),
                     ("enable_prefix_caching", True, "--enable-prefix-caching"),
                     ("enable_prefix_caching", False, "--no-enable-prefix-caching"),
                     ("async_scheduling", False, "--no-async-scheduling"),
                     ("enable_expert_parallel", True, "--enable-expert-parallel"),
                     ("enable_lora", True, "--enable-lora"),
                     ("language_model_only", True, "--language-model-only"))


def context_flags(est: Estimate, changed: set[str]) -> list[str]:
    """Flags (and the layer-partition variable) for what the user's run set and the fix leaves alone."""
    given = est.inputs.get("settings")
    if given is None:
        return []
    out: list[str] = []
    if given.pp_layer_partition and "pp_layer_partition" not in changed and "pipeline_parallel_size" not in changed:
        out.append("VLLM_PP_LAYER_PARTITION=" + ",".join(map(str, given.pp_layer_partition)))
    for key in _CONTEXT_KEYS:
        value = getattr(given, key, None)
        if key in changed or value in (None, "", "auto", 0, 0.0) or (key.endswith("_size") and value == 1):
            continue
        if key == "kv_cache_memory_bytes" and value % GiB == 0:
            value = f"{value // GiB}G"          # vLLM's binary suffix, as the fixes write it
        out.append(_flag(key.replace("_", "-"), value))
    # Online quantization (a 16-bit checkpoint quantized while loading) exists only through the flag;
    # a checkpoint's own format (or one read from its name) vLLM finds without it.
    if given.quantization and "quantization" not in changed and not est.spec.quantization \
            and str(given.quantization).lower() in ONLINE_QUANT_METHODS:
        out.append(_flag("quantization", given.quantization))
    for key, value, flag in _CONTEXT_SWITCHES:
        if key not in changed and getattr(given, key, None) is value:
            out.append(flag)
    # the media limits decide the profile run's dummy inputs (and whether the vision tower loads)
    if given.limit_mm_per_prompt and not given.language_model_only and "limit_mm_per_prompt" not in changed \
            and "language_model_only" not in changed:
        out.append(_mm_flag(est, given.limit_mm_per_prompt))
    method = (given.speculative_method or "").lower()
    draft = given.speculative_model
    if (method.endswith("mtp") or method == "ngram" or draft) and "speculative_method" not in changed:
        if draft and est.profile.version < SPECULATIVE_CONFIG_FROM:
            # before --speculative-config: the draft and its token count are flags of their own
            out += [_flag("speculative-model", draft)] + (
                [_flag("num-speculative-tokens", given.num_speculative_tokens)] if given.num_speculative_tokens else [])
            return out
        # a draft model's run repeats its draft (the method vLLM infers from it is left to vLLM)
        spec = {"method": given.speculative_method} if method != "draft_model" else {}
        if draft:
            spec["model"] = draft
        if given.num_speculative_tokens:
            spec["num_speculative_tokens"] = given.num_speculative_tokens
        out.append("--speculative-config " + shlex.quote(json.dumps(spec, separators=(",", ":"))))
    return out


# A flag whose name ends in the word key/token/secret/password (--api-key, --hf-token, --hf_token): not
# --max-num-batched-tokens, --tokenizer or --long-prefill-token-threshold, whose values are settings.
_SECRET_FLAG = re.compile(r"(?i)^--?(?:[a-z0-9]+[-_])*(?:api[-_]?key|key|token|secret|password|passwd)$")



def command_with(base: list[str], flags: str) -> str:
    """The user's own command with a fix applied: every flag the fix sets (in any spelling vLLM
    accepts: -tp, --tensor_parallel_size, --max-model-len=…) replaced by the fix's value, the
    rest kept as written — so a copied fix keeps the user's TP, model path and other flags.
    Values of key/token/secret flags are not echoed."""
    fix = shlex.split(flags)
    env = [t for t in fix if is_env_word(t)]
    fix = _last_of_each([t for t in fix if not is_env_word(t)])
    changed = {flag_key(t.split("=", 1)[0]) for t in fix if is_flag_word(t)} - {None}
    dropped = {t.split("=", 1)[0] for t in env}
    if changed & {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"}:
        # more or fewer GPUs: the old device list would contradict the fix
        dropped.add("CUDA_VISIBLE_DEVICES")
    if "pipeline_parallel_size" in changed:
        dropped.add("VLLM_PP_LAYER_PARTITION")   # one entry per stage: stale once the stages change
    base = [t for t in base if not (is_env_word(t) and t.split("=", 1)[0] in dropped)]
    out: list[str] = []
    for key, words in flag_groups(base):
        if key in changed:
            continue
        name, eq, _value = words[0].partition("=")
        if key is None and is_flag_word(words[0]) and _SECRET_FLAG.match(name):
            # (an engine setting is never a secret, whatever its last word: argparse takes
            # `--max-num-batched-token`, a prefix of --max-num-batched-tokens)
            out += [f"{name}=[redacted]"] if eq else [words[0]] + (["[redacted]"] if len(words) > 1 else [])
            continue
        out += words
    return _shell_join(env + out + fix)


def flag_groups(tokens: list[str]) -> list[tuple[str | None, list[str]]]:
    """Command words grouped as argparse reads them: a flag with its value ("--max-model-len 4096",
    "--max-model-len=4096") and the settings key it sets (None for other flags and plain words)."""
    groups: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, _v = tok.partition("=")
        flag = is_flag_word(tok)
        takes = flag and not eq and flag_takes_value(name) and i + 1 < len(tokens) and not is_flag_word(tokens[i + 1])
        groups.append((flag_key(name) if flag else None, tokens[i:i + (2 if takes else 1)]))
        i += 2 if takes else 1
    return groups


def _last_of_each(tokens: list[str]) -> list[str]:
    """Flags with their values, a flag given twice kept at its last value: a setting read back from
    vLLM's figures (`--pipeline-parallel-size 4`) comes first and a fix that changes it after."""
    groups = flag_groups(tokens)
    last = {key: n for n, (key, _g) in enumerate(groups) if key}
    return [t for n, (key, g) in enumerate(groups) if key is None or last[key] == n for t in g]


# Words the shell would leave alone, plus `~` and `$VAR` / `${VAR}` the user wrote to be expanded:
# shlex.join would single-quote those and turn `--download-dir ~/models` into a literal '~/models'.
_EXPANDABLE = re.compile(r"[\w@%+=:,./~-]*(?:\$\{?\w+\}?[\w@%+=:,./~-]*)*")


def _shell_join(words: list[str]) -> str:
    return " ".join(w if w and _EXPANDABLE.fullmatch(w) else shlex.quote(w) for w in words)


def friendly_len(n: int) -> int:
    """A round context length ≤ n: the largest power of two, or a multiple of 1024 if much closer, or of
    256 where even that gives up more than 15% (1,936 → 1,792, not 1,024)."""
    if n < 1024:
        return max(16, n // 16 * 16)
    p2 = 1 << (n.bit_length() - 1)
    k = n // 1024 * 1024
    return p2 if p2 >= 0.85 * n else k if k >= 0.85 * n else n // 256 * 256


def _flag(name: str, value) -> str:
    return f"--{name} {value}"


def _check(est: Estimate, **changes) -> tuple[Estimate, bool, int]:
    """Re-run a change; (estimate, fits, largest max_model_len that fits).

    When the diagnosis anchored the model on vLLM's printed KV figure, the fix must fit both in
    that state and in the model's own state (what `kvdoctor estimate` with the same flags says):
    a fix that only works on one of the two is not offered.
    """
    e = rerun(est, **changes)
    fits, fit = e.fits, e.max_model_len_fit
    plain = est.reconciliation.plain
    if plain is not None:
        p = rerun(plain, **changes)
        fits, fit = fits and p.fits, min(fit, p.max_model_len_fit)
    return e, fits, fit


def _length_sets_profile(est: Estimate, length: int, base: Estimate | None = None, **changes) -> bool:
    """Does max_model_len size the profile run or a buffer built with the model (with `changes`)? V0
    without chunked prefill batches max(max_model_len, 2048) tokens (vllm/engine/arg_utils.py), V1 from
    0.11 builds Qwen2-VL's dummy video as long as max_model_len holds (gpu_model_runner.py
    _get_mm_dummy_batch, seq_len=max_model_len; multimodal_profile.qwen2_vl_dummy_video), DeepSeek-V4's
    profile workspace holds rows per token of max_model_len (activation.deepseek_v4_profile_peak) and a
    DSA model with an fp8 cache reserves 5 × max_model_len prefill rows at load
    (activation.sparse_mla_load_buffers): a shorter context then also shrinks that memory, and the length
    that fits is longer than the one the KV pool holds now. `base`: `est` re-run with `changes`, where the
    caller has it already."""
    if base is None:
        base = rerun(est, **changes) if changes else est
    other = rerun(est, **changes, max_model_len=length)
    return other.activation_bytes != base.activation_bytes or other.weights_bytes != base.weights_bytes


def _length_cause(est: Estimate) -> str:
    """Why a shorter context frees memory besides KV (for a fix whose length _length_sets_profile found)."""
    if est.profile.engine == "v0":
        return "V0 without chunked prefill profiles one forward pass over max_model_len tokens"
    if est.spec.deepseek_v4_layers:
        return (f"vLLM {est.profile.release} sizes DeepSeek-V4's shared workspace (the indexer's key gather, "
                "FlashMLA's prefill rows) by max_model_len in its profile run")
    if sparse_mla_load_buffers(est.spec, est.settings, est.profile, est.max_model_len)[1]:
        return f"vLLM reserves {SPARSE_MLA_WORKSPACE_WORDS} while the model loads"
    return (f"vLLM {est.profile.release}'s profile run grows with max_model_len (its dummy video, or its batch "
            "without chunked prefill, is as long as the context)")


def _largest_fitting_len(est: Estimate, low: int, **changes) -> int:
    """The largest max_model_len under the requested one that fits with `changes` when re-run
    (bisection: each length has its own profile run). `low` fits with the pool the full length
    leaves, so it fits with a smaller peak."""
    lo, hi = low, est.max_model_len - 1
    if not _check(est, **changes, max_model_len=lo)[1]:
        return low
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _check(est, **changes, max_model_len=mid)[1]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _with_len(est: Estimate, changes: dict, why: str, keeps_goal: bool, caveat: str = "",
              flags: list[str] | None = None) -> Suggestion | None:
    """Evaluate `changes`; if it does not fit, add the largest max-model-len that fits under it. A change
    to what the run already set (--enforce-eager on an eager run) is no fix: None."""
    if changes and all(getattr(est.settings, k, object()) == v for k, v in changes.items()):
        return None
    flags = list(flags or [])
    e, ok, fit = _check(est, **changes)
    if e.error_kind == "no_cache_blocks":
        return None
    if not ok:
        if fit <= 0:
            return None
        if _length_sets_profile(est, fit, base=e, **changes):
            fit = _largest_fitting_len(est, fit, **changes)    # a shorter context profiles less too
        for target in dict.fromkeys([friendly_len(fit), fit]):
            e, ok, _ = _check(est, **changes, max_model_len=target)
            if ok:
                break
        if not ok:
            return None
        flags.append(_flag("max-model-len", target))
        keeps_goal = False
        changes = {**changes, "max_model_len": target}
    return Suggestion(" ".join(flags), changes, e, why, keeps_goal, caveat, ok=ok)


def suggest(est: Estimate, *, error_kind: str | None = None, gpu_count: int | None = None) -> list[Suggestion]:
    """Ranked fixes for the situation `est` describes (error_kind from the paste when known)."""
    kind = error_kind or est.error_kind
    if kind == "max_model_len_derived" and error_kind is None and est.error_kind == kind:
        return _over_config_fixes(est)   # the estimate's own check (a pasted one: config_error_fixes)
    if kind in CONFIG_ERRORS:
        return []          # a settings error, not a memory one: config_error_fixes answers it
    if est.spec.kv_unmodelled and kind not in ("cuda_oom_load", "cuda_oom_graph", "cuda_oom_runtime"):
        # token counts from a KV layout kvdoctor does not model would be invented figures
        return []
    if kind in (None, "other", "no_cache_blocks", "kv_capacity_v0", "kv_capacity_v1", "mamba_blocks") and est.fits:
        # nothing failed in the model's arithmetic: capacity levers would answer a problem it did
        # not find (vLLM's own numbers, when printed, give the unchecked fixes instead)
        return []
    out: list[Suggestion] = []
    s = est.settings
    if mamba_align_refused(est.layout, s, est.profile):
        # refused before any memory is sized (kv_layout.MAMBA_ALIGN_BATCH_CHECK): a batch that holds the block,
        # or no prefix caching (no 'align' mode)
        n = mamba_align_batch(est.layout.block_size)
        out += [x for x in (
            _with_len(est, {"max_num_batched_tokens": n}, f"vLLM's Mamba cache 'align' mode (prefix caching) needs a "
                      f"batch of at least the {est.layout.block_size:,}-token attention block", True,
                      flags=[_flag("max-num-batched-tokens", n)]),
            _with_len(est, {"enable_prefix_caching": False}, NO_ALIGN_WHY, True, NO_ALIGN_COST,
                      ["--no-enable-prefix-caching"])) if x]
    if kind in ("cuda_oom_load",):
        return _weights_fixes(est, gpu_count)
    if kind in ("cuda_oom_profile",):
        out += _activation_fixes(est)
    if kind in ("cuda_oom_graph", "cuda_oom_runtime"):
        # Outside vLLM's budget: the KV levers below do not apply.
        return _dedupe_fitting(_graph_fixes(est, kind))
    if kind in ("free_memory_startup",):
        out += _free_memory_fixes(est)
    if kind == "mamba_blocks" or est.error_kind == "mamba_blocks":
        out += _mamba_fixes(est)
    if kind == "no_cache_blocks" or (kind == "startup_log_ok" and est.activation_bytes > max(est.kv_cache_bytes, 0)):
        # a start-up log whose profile run took more than the KV cache got (vllm#28228: 64,000 batched
        # tokens, 7.25 GiB of activation beside a 2.30 GiB pool): the profile-run levers come first
        out += _activation_fixes(est)

    if kind in ("kv_capacity_v0", "kv_capacity_v1", "no_cache_blocks", "cuda_oom_profile") or not est.fits:
        out += _kv_memory_fixes(est)
        out += _multimodal_fixes(est)
        out += _window_fixes(est)

    # 1. The largest max_model_len that fits (keeps everything else).
    shown = fit = est.max_model_len_fit
    if est.reconciliation.plain is not None:
        fit = min(fit, est.reconciliation.plain.max_model_len_fit)  # also fit the model's own state (see _check)
    profiled = False
    if fit <= 0 and not est.fits and _length_sets_profile(est, 2048) and _check(est, max_model_len=2048)[1]:
        # no KV block at the asked length, but the profile shrinks with the context: one that fits
        # with its own (smaller) profile run, from the 2,048 tokens every V0 profile batches at least
        shown = fit = _largest_fitting_len(est, 2048)
        profiled = True
    elif fit > 0 and not est.fits and _length_sets_profile(est, fit):
        longer = _largest_fitting_len(est, fit)
        profiled = longer > fit
        if profiled:
            shown = fit = longer
    if fit > 0 and not est.fits:
        for target in dict.fromkeys([friendly_len(fit), fit]):
            e, ok, _ = _check(est, max_model_len=target)
            if ok and profiled:
                why = (f"the largest context that fits is {shown:,} tokens: {_length_cause(est)}, so a shorter "
                       "context also frees that memory" + (f"; {target:,} is a round value under it"
                                                           if target != shown else ""))
                out.append(Suggestion(_flag("max-model-len", target), {"max_model_len": target}, e, why, False))
                break
            if ok:
                why = ("the largest context that fits" if target == shown else
                       f"the largest context that fits is {shown:,} tokens by vLLM's figures and {fit:,} by the "
                       f"model's own estimate; {target:,} is a round value under both" if fit < shown else
                       f"the largest context that fits is {shown:,} tokens; {target:,} is a round value under it")
                out.append(Suggestion(_flag("max-model-len", target), {"max_model_len": target}, e, why, False))
                break
    # 1c. V0 without chunked prefill profiles a forward pass over max_num_batched_tokens =
    # max(max_model_len, 2048) tokens (vllm/engine/arg_utils.py): chunked prefill bounds it. Not
    # offered where V0 keeps it off itself (vllm.v0_keeps_chunked_prefill_off), nor where the user's
    # own --max-num-batched-tokens would stay the batch.
    tb = s.max_num_batched_tokens or 0
    if est.profile.engine == "v0" and est.profile.chunked_prefill_flag and not s.enable_chunked_prefill \
            and tb >= 4096 and not v0_keeps_chunked_prefill_off(est.profile, est.spec, s) \
            and kind in ("kv_capacity_v0", "no_cache_blocks", "cuda_oom_profile"):
        chunked = rerun(est, enable_chunked_prefill=True)
        chunk = chunked.settings.max_num_batched_tokens or 0
        # only where the smaller batch lowers the peak: the sampler's pass over max_num_seqs rows of the
        # vocabulary can be the larger part of it (Llama-3-70B: 256 × 128,256 logits), and then the KV
        # cache gains nothing
        sug = _with_len(est, {"enable_chunked_prefill": True},
                        f"without chunked prefill V0's profile run is one forward pass over {tb:,} tokens "
                        f"(max_model_len); with it, over {chunk:,}, and the rest goes to the KV cache",
                        True, flags=["--enable-chunked-prefill"]) \
            if chunk < tb and chunked.activation_bytes < est.activation_bytes else None
        if sug:
            out.append(sug)
    # 1b. Pipeline stages that hold unequal shares of memory: move layers to the roomier stage.
    sug = _rebalance_stages(est)
    if sug:
        out.append(sug)
    # 2. Higher utilization (bounded: 0.95, and free memory when other processes hold some).
    # Not for OOMs outside vLLM's budget (graphs, sampler warm-up, serving): there the margin
    # (1 − u) is what ran out, so raising u is the wrong direction.
    u = s.gpu_memory_utilization or est.profile.default_utilization
    # 0.34's extensible KV cache keeps its own margin after warmup (vllm.EXTENSIBLE_KV_CACHE_FROM): its
    # default, 1.0, is the ceiling there
    extensible = extensible_kv_cache(est.profile, s, est.gpu_name)
    cap = EXTENSIBLE_UTILIZATION if extensible else MOST_UTILIZATION
    if u < cap - 1e-9 and kind not in ("free_memory_startup", "cuda_oom_graph", "cuda_oom_runtime") \
            and not s.kv_cache_memory_bytes:      # a fixed pool does not grow with the budget
        # The smallest utilization that fits, plus 0.01 of margin: every point above it is memory
        # taken from CUDA graphs, the sampler warm-up and other processes for nothing.
        least = _least_fitting_utilization(est, round(u + 0.01, 2), cap)
        target = cap if least is None else min(cap, round(least + 0.01, 2))
        others = est.others_charged_bytes
        if kind == "startup_log_ok" and est.fits and not others:
            # a run that starts asks how much more it can have, not the least that fits
            target = _roomy_utilization(est, u, cap) or target
        why = (f"vLLM {est.profile.release} counts the {others / GiB:.2f} GiB other processes hold "
               "against this instance's budget, so its utilization has to cover theirs too"
               if others else
               f"gives the KV cache {(target - u) * est.gpu_total_bytes / GiB:.2f} GiB more of the card")
        if extensible and not others:
            # the KV cache's gain is not (1.0 − u) of the card there: warmup's margin may bind first
            why = (f"vLLM {est.profile.release} sizes the KV cache after warmup and keeps its own margin, so "
                   "its default utilization is 1.0 (leaving the flag out is the same)")
        default = EXTENSIBLE_UTILIZATION if extensible else est.profile.default_utilization
        sug = _with_len(est, {"gpu_memory_utilization": target}, why, True,
                        _utilization_caveat(u, default, _unified(est)),
                        [_flag("gpu-memory-utilization", target)])
        if sug:
            out.append(sug)
    # 3. fp8 KV cache.
    fp8_ok = est.profile.fp8_kv_cache and _v1_runs_fp8_kv(est)
    # (DeepSeek-V4 is already modelled with its fp8_ds_mla cache, which its default backends require)
    if (s.kv_cache_dtype or "auto") == "auto" and fp8_ok and est.layout.kv_bytes_per_token \
            and est.layout.dsv4 is None:
        sug = _with_len(est, {"kv_cache_dtype": FP8_KV}, "halves the bytes per token of KV", True,
                        "small accuracy cost; check your backend supports it", [_flag("kv-cache-dtype", FP8_KV)])
        if sug:
            out.append(sug)
    # 4–5. More GPUs with tensor parallelism, FP8 weights, and both together on the GPUs the user has.
    # already in rank order: error-specific fixes, then the levers; fixes that need more GPUs than the
    # user has come after all of them
    gpu_fixes, beyond = _split_and_fp8_fixes(est, _known_gpus(est, gpu_count),
                                             "FP8 weights take about half the memory of 16-bit ones",
                                             settled=_keeps_context(out))
    fixes = _drop_dominated(_last_resorts_last(_dedupe_fitting(out + gpu_fixes), est.max_model_len)
                            + _dedupe_fitting(beyond))
    if kind == "startup_log_ok" and est.fits and s.kv_cache_memory_bytes:
        # a run that starts asks for more KV cache: with a fixed pool, the pool asked for is the lever
        fixes = _kv_memory_fixes(est, roomy=True) + fixes
    if kind == "startup_log_ok" and est.fits:
        # a run that starts asks for more KV cache: a lever that leaves it as it is answers nothing (FP8
        # weights where vLLM loaded none of them itself, a ServerlessLLM log's 0.0 GiB)
        fixes = [x for x in fixes if "max_model_len" in x.changes or x.estimate.kv_cache_tokens > est.kv_cache_tokens]
    return fixes


def _keeps_context(fixes: list[Suggestion]) -> bool:
    """Does one of `fixes` serve the whole requested context (then more GPUs are not needed for it)?"""
    return any(x.keeps_goal and x.fits for x in fixes)


def _known_gpus(est: Estimate, gpu_count: int | None) -> int | None:
    """The GPUs the user has, where known: --gpu-count, a count in the GPU's name ("2x L40S") or the
    paste's (nvidia-smi's list, "on 4 GPUs"). `Estimate.gpu_count` defaults to the ranks the settings
    use, so the count the estimate was given is read from its inputs. A count below those ranks is not
    all the GPUs the run had (one card's nvidia-smi row, "1 GPU" said of something else): unknown."""
    n = gpu_count or est.inputs.get("gpu_count")
    return n if isinstance(n, int) and n >= _gpus_of(est) else None


def _gpus_of(est: Estimate) -> int:
    """The GPUs a run takes: tensor × pipeline × data parallel."""
    return _gpus_for(est, est.settings.tensor_parallel_size)


def _wider_splits(est: Estimate) -> list[int]:
    """The tensor-parallel sizes above the run's that a fix tries (2, 4, 8): those that split the
    attention heads evenly (vLLM refuses the others, paste "tp_divisibility")."""
    return [tp for tp in (2, 4, 8) if tp > est.settings.tensor_parallel_size and not est.spec.num_attention_heads % tp]


def _gpus_for(est: Estimate, tp: int) -> int:
    """The GPUs the user's run takes with tensor parallelism `tp` (its pipeline and data parallelism kept)."""
    s = est.settings
    return max(1, tp) * max(1, s.pipeline_parallel_size) * max(1, s.data_parallel_size)


def _split_and_fp8_fixes(est: Estimate, have: int | None, fp8_why: str, settled: bool = False
                         ) -> tuple[list[Suggestion], list[Suggestion]]:
    """(fixes that run on the GPUs the user has, fixes that need more of them).

    Tensor parallelism over the fewest GPUs that run, or twice as many where those keep the whole
    context (a 70B model at 8,192 tokens: TP 4 rather than TP 2 with 5,120); FP8 weights. Where the
    number of GPUs is known, the split stays within it; where neither lever keeps the context alone
    there, the widest split it allows is tried with FP8 weights (a 70B model on 2× L40S: neither TP 2
    nor FP8 on one card holds its weights, both together do); a split beyond it is offered last, and
    only when nothing within it keeps the context. `settled`: another fix already keeps it."""
    splits = _wider_splits(est)
    within = [tp for tp in splits if not have or _gpus_for(est, tp) <= have]
    fp8 = _online_fp8_fix(est, fp8_why, "or use an FP8/AWQ checkpoint of the same model")
    four_bit = _inflight_4bit_fix(est) if not est.fits and (fp8 is None or not (fp8.keeps_goal and fp8.fits)) else None
    out = [x for x in (_more_gpus_fix(est, within, have), fp8, four_bit) if x]
    settled = settled or _keeps_context(out)
    if have and within and not settled:
        both = _online_fp8_fix(est, f"FP8 weights split over {_gpus_for(est, within[-1])} GPUs",
                               _gpus_caveat(_gpus_for(est, within[-1]), have), tensor_parallel_size=within[-1])
        if both:
            out.append(both)
            settled = _keeps_context([both])
    more = _more_gpus_fix(est, [tp for tp in splits if tp not in within], have) if have and not settled else None
    if not est.fits and not settled and more is None and not any("tensor_parallel_size" in x.changes for x in out):
        # a run that fails where no tensor split up to 8 runs: pipeline stages over more GPUs (a 671B model
        # on 8× H100: two nodes)
        stages = _stages_fix(est, splits[-1] if splits else est.settings.tensor_parallel_size, have)
        if stages is not None and have and _gpus_of(stages.estimate) <= have:
            out.append(stages)
        elif stages is not None:
            more = stages
    return out, [more] if more else []


def _stages_fix(est: Estimate, tp: int, have: int | None) -> Suggestion | None:
    """Pipeline parallelism over two or four times the stages, with tensor parallelism `tp` in each: the
    lever past TP 8 (vLLM's pipeline stages pass only activations between them, so they can span nodes;
    in the engine from 0.5.1, vllm PR #4412). The fewest stages that run, or twice as many where those
    keep the whole context."""
    s = est.settings
    if est.profile.version < PIPELINE_FROM:
        return None
    pp0 = max(1, s.pipeline_parallel_size)
    first: Suggestion | None = None
    for factor in (2, 4):
        pp = pp0 * factor
        n = _gpus_for(est, tp) * factor
        changes = {"pipeline_parallel_size": pp} | ({"tensor_parallel_size": tp} if tp != s.tensor_parallel_size else {})
        flags = ([_flag("tensor-parallel-size", tp)] if "tensor_parallel_size" in changes else []) + \
            [_flag("pipeline-parallel-size", pp)]
        sug = _with_len(est, changes, f"splits the layers over {pp} pipeline stages of {tp} GPUs ({n} GPUs in all); "
                        "stages pass only activations to each other, so they can be on different nodes", True,
                        _gpus_caveat(n, have), flags)
        if sug and sug.keeps_goal:
            return sug
        first = first or sug
    return first


def _gpus_caveat(n: int, have: int | None) -> str:
    """What a split over `n` GPUs in all asks of the hardware."""
    if not have:
        return "needs that many GPUs"
    return f"uses {n} of the {have} GPUs" if n <= have else MORE_GPUS.format(n=n, have=have)


def _more_gpus_fix(est: Estimate, splits: list[int], have: int | None) -> Suggestion | None:
    """Tensor parallelism over the fewest of `splits` that run, or twice as many where those keep the
    whole context."""
    pp = max(1, est.settings.pipeline_parallel_size)
    first: Suggestion | None = None
    first_tp = 0
    for tp in splits:
        n = _gpus_for(est, tp)
        per = "pipeline stage" if pp > 1 else "data-parallel replica"
        gpus = f"{tp} GPUs" if n == tp else f"{tp} GPUs per {per} ({n} GPUs in all)"
        sug = _with_len(est, {"tensor_parallel_size": tp},
                        f"splits weights{'' if est.spec.kv_replicated_by_tp else ' and KV heads'} over {gpus}", True,
                        _gpus_caveat(n, have) + ("; its one latent KV head is replicated on every rank"
                                                 if est.spec.kv_replicated_by_tp else ""),
                        [_flag("tensor-parallel-size", tp)])
        if sug and sug.keeps_goal and (not first_tp or tp <= 2 * first_tp):
            return sug
        if sug and not first:
            first, first_tp = sug, tp
    return first


def _over_config_fixes(est: Estimate) -> list[Suggestion]:
    """A requested length above the config's (memory.length_over_config): the config's length, or the
    override variable where the KV cache holds the requested length."""
    cap = length_over_config(est.spec, est.settings, est.profile)
    out: list[Suggestion | None] = []
    if cap:
        e, ok, _ = _check(est, max_model_len=cap)
        if ok:
            out.append(Suggestion(_flag("max-model-len", cap), {"max_model_len": cap}, e,
                                  "the longest context the model's config allows", False))
        else:
            # the config's length does not fit either: the longest that does (below the config's)
            out.append(_with_len(est, {}, f"the longest context that fits (the model's config allows {cap:,})",
                                 False))
    e = rerun(est, allow_long_max_model_len=True)
    if e.fits:
        out.append(Suggestion("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", {"allow_long_max_model_len": True}, e,
                              "lets vLLM go past the config's length", True,
                              "only for a model that really handles longer contexts (RoPE scaling), else its "
                              "outputs degrade"))
    return [x for x in out if x]


def _rebalance_stages(est: Estimate) -> Suggestion | None:
    """With pipeline parallelism every stage gets the block count of the tightest one
    (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs), so a stage on a smaller card, or one
    holding the embedding or lm_head, sets the capacity of all. VLLM_PP_LAYER_PARTITION
    (vllm/distributed/utils.py get_pp_indices) moves layers off it: a pattern search moves layers
    from the tightest stage to the one where they help most, while the capacity grows."""
    s = est.settings
    pp = s.pipeline_parallel_size
    n = est.spec.num_layers
    if pp <= 1 or n < 2 * pp:
        return None
    current = stage_sizes(est.spec, est.profile, pp, s.pp_layer_partition)

    def score(parts: list[int]) -> tuple[tuple[bool, int, int, int], int]:
        # the tightest stage's KV room last: it still grows (from below zero) while nothing fits,
        # so the search does not stall when the first moves only shrink an overrun
        e, ok, fit = _check(est, pp_layer_partition=parts)
        return (ok, fit, e.kv_cache_tokens, e.kv_cache_bytes), e.tightest_stage

    best = current
    best_score, tight = score(current)
    start = best_score
    # Pattern search: move `step` layers off the tightest stage to whichever stage gains most; halve
    # the step when no move helps. O(pp × log n) re-checks, not pp² × n (a bot answers in ~1 s).
    step = max(1, n // (2 * pp))
    while step >= 1:
        trials = [[x - step * (k == tight) + step * (k == b) for k, x in enumerate(best)]
                  for b in range(pp) if b != tight and best[tight] > step]
        scored = max(((score(t), t) for t in trials), key=lambda r: r[0][0], default=None)
        if scored is None or scored[0][0] <= best_score:
            step //= 2
            continue
        (best_score, tight), best = scored
    if best == current or (not (best_score[0] and not start[0]) and best_score[1] < 1.05 * start[1]):
        return None     # no gain, or a few percent: not worth a fix of its own
    flag = "VLLM_PP_LAYER_PARTITION=" + ",".join(map(str, best))
    return _with_len(est, {"pp_layer_partition": best},
                     f"moves layers to the stage with room to spare ({', '.join(map(str, current))} → "
                     f"{', '.join(map(str, best))} layers per stage): every stage gets the tightest stage's "
                     "block count", True, "an environment variable, set before `vllm serve`", [flag])


def _dedupe_fitting(out: list[Suggestion]) -> list[Suggestion]:
    seen, uniq = set(), []
    for sug in out:
        if sug.flags not in seen and sug.fits:
            seen.add(sug.flags)
            uniq.append(sug)
    return uniq


# Settings a fix changes only for the memory they free, each at a cost (accuracy, speed, concurrency, media,
# GPUs, headroom). The batch size is one only where it is no larger than the other fix runs with: a fix may
# also raise it above a default for throughput.
_COSTLY_LEVERS = frozenset({"gpu_memory_utilization", "quantization", "kv_cache_dtype", "max_num_seqs",
                            "enforce_eager", "tensor_parallel_size", "pipeline_parallel_size", "cpu_offload_gb",
                            "limit_mm_per_prompt", "language_model_only", "enable_chunked_prefill"})


def _costs_only(x: Suggestion, y: Suggestion) -> bool:
    """Are the changes `x` makes beyond `y`'s all costs (`_COSTLY_LEVERS`, or a batch no larger than `y`'s)?"""
    for key in set(x.changes) - set(y.changes):
        if key == "max_num_batched_tokens":
            if x.changes[key] > (y.estimate.settings.max_num_batched_tokens or 0):
                return False
        elif key not in _COSTLY_LEVERS:
            return False
    return True


def _drop_dominated(fixes: list[Suggestion]) -> list[Suggestion]:
    """A fix that makes another fix's changes and, beyond them, only costly ones (`_costs_only`) for no more
    KV cache and no longer context asks the user to pay for nothing: with --kv-cache-memory-bytes lighter
    weights leave the pool as it is, so "--quantization fp8 --max-model-len 16384" is "--max-model-len 16384"
    with a cost."""
    def dominated(x: Suggestion) -> bool:
        return any(y is not x and y.changes.items() < x.changes.items() and _costs_only(x, y)
                   and y.estimate.kv_cache_tokens >= x.estimate.kv_cache_tokens
                   and y.estimate.max_model_len >= x.estimate.max_model_len for y in fixes)
    return [x for x in fixes if not dominated(x)]


def _utilization_caveat(u: float, default: float, unified: bool = False) -> str:
    """What a raised utilization takes from: the margin vLLM leaves outside its budget, or, where the user
    set it below the release's default (0.9, 0.92 from 0.20, 1.0 with 0.34's extensible KV cache: the
    profile's) and below the 0.9 recipes still pass, memory usually kept for something else (a trainer
    sharing the card, a second instance), so raising it is the user's call. On a unified board (`unified`)
    the memory is the system's RAM, which the operating system loses."""
    if unified:
        return UNIFIED_RAISE
    if u < min(default, COPIED_UTILIZATION) - 1e-9:
        return f"{u:g} is below vLLM's default {default:g}: {SHARED_CARD} — a trainer sharing the card, another instance"
    return "leave room for other processes on the card" if default == EXTENSIBLE_UTILIZATION else \
        "leave headroom for CUDA graphs and other processes"


def _roomy_utilization(est: Estimate, u: float, cap: float) -> float | None:
    """For a run that starts: the highest utilization up to `cap` that keeps outside vLLM's budget what
    the release adds after sizing the KV cache. Where the release budgets its CUDA graphs (V1 0.20+) that
    is the cap's own margin; where it captures them afterwards, their printed size ("Graph capturing
    finished in 5 secs, took 0.53 GiB") besides (the same arithmetic as vLLM's own "increase
    --gpu-memory-utilization from U to U + g/T" the other way round). None where that is unknown (graphs
    outside the budget that the paste does not size), on a unified-memory board or a card of such a board's
    size (its GPU memory is the system's, which the OS needs) or where it is no step up."""
    p, s, g = est.profile, est.settings, est.gpu
    after = not s.enforce_eager and graphs_outside_budget(p, s)
    printed = est.inputs.get("cuda_graph_bytes")
    if g is None or not est.gpu_total_bytes or (after and not printed):
        return None
    # a card known only by the size vLLM's figures imply may be a unified board of that size (GB10's 119.63 GiB)
    named = bool(g.vendor) and g.total_bytes == est.gpu_total_bytes
    if g.unified or (not named and any(c.unified for c in cards_near(est.gpu_total_bytes, 0.02))):
        return None
    target = math.floor((cap - (max(printed, 0) / est.gpu_total_bytes if after else 0)) * 100 + 1e-6) / 100
    return target if target > u + 0.01 + 1e-9 else None


def _least_fitting_utilization(est: Estimate, lo: float, hi: float, **changes) -> float | None:
    """The smallest gpu_memory_utilization in [lo, hi] (steps of 0.01) at which the run fits (with `changes`)."""
    step = round(lo, 2)
    while step <= hi + 1e-9:
        if _check(est, gpu_memory_utilization=step, **changes)[1]:
            return step
        step = round(step + 0.01, 2)
    return None


def _fp8_weights_ok(est: Estimate) -> bool:
    """--quantization fp8 exists in this version and runs on this card (Profile.fp8_weights_min_cc)."""
    need = est.profile.fp8_weights_min_cc
    cc = cc_number(est.compute_capability)
    return need is not None and (cc is None or cc >= need)


def _v1_runs_fp8_kv(est: Estimate) -> bool:
    """Does this release's V1 pick an attention backend that takes an FP8 KV cache on this card?
    None before 0.8 (the V1 FlashAttention path ignored or refused it). A card with FP8 (CC ≥ 8.9,
    MI300) takes it from 0.8. Other NVIDIA cards of CC 8.0+ (Ampere) from 0.11.0: vllm/platforms/cuda.py
    then sends an fp8 KV cache off SM 9.0 to the Triton backend, where 0.10.2 kept FlashAttention, whose
    FA2 refuses it ("FlashAttention does not support fp8 kv-cache on this device", v1/attention/backends/
    flash_attn.py). MLA models: FlashMLA / CUTLASS MLA (SM 9.x, 10.x) take it from 0.11 ("FlashMLA V1 with
    FP8 KV cache not yet supported" to 0.10); Triton MLA, every other card's MLA backend, from 0.18 ("FP8
    Triton MLA not yet supported" to 0.17.1, v1/attention/backends/mla/triton_mla.py)."""
    p = est.profile
    if p.engine != "v1":
        return True
    if p.version < (0, 8, 0):
        return False
    gpu = est.gpu
    cc = (cc_number(gpu.compute_capability) or 0) if gpu is not None else 0
    if est.spec.uses_mla:
        if 9.0 <= cc < 11.0:        # FlashMLA / CUTLASS MLA
            return p.version >= (0, 11, 0)
        return p.version >= (0, 18, 0) and (cc >= 8.0 or bool(gpu and gpu.fp8))
    if gpu is not None and gpu.fp8:
        return True
    return p.version >= (0, 11, 0) and cc >= 8.0


def _online_fp8_fix(est: Estimate, why: str, caveat: str, tensor_parallel_size: int | None = None
                    ) -> Suggestion | None:
    """FP8 weights quantized while loading a 16-bit checkpoint, where that can work.

    Before 0.16 online FP8 allocates the 16-bit weights and quantizes them after loading
    (quantization/fp8.py: weights in params_dtype, "wait until process_weights_after_loading"), so
    they must fit on the card first; 0.16 builds them on the meta device and quantizes layer by
    layer (Fp8OnlineLinearMethod / Fp8OnlineMoEMethod). The flag: `fp8` until 0.30; later main
    refuses online quantization under that name ("Please use `--quantization fp8_per_tensor`"),
    which exists from 0.20 — so `fp8_per_tensor` from 0.20."""
    s = est.settings
    if s.quantization or est.spec.quantization or not _fp8_weights_ok(est):
        return None
    # with a wider split (_split_and_fp8_fixes), each GPU loads its share of the 16-bit weights
    split = {"tensor_parallel_size": tensor_parallel_size} if tensor_parallel_size else {}
    if est.profile.version < (0, 16, 0):
        room = est.gpu_total_bytes - (est.inputs.get("other_process_bytes") or 0)
        loads = rerun(est, **split) if split else est
        if loads.weights_bytes + loads.non_torch_bytes > room:
            return None
    flag = "fp8_per_tensor" if est.profile.version >= (0, 20, 0) else "fp8"
    flags = ([_flag("tensor-parallel-size", tensor_parallel_size)] if split else []) + [_flag("quantization", flag)]
    return _with_len(est, {**split, "quantization": "fp8"}, why, True, caveat, flags)


def _inflight_4bit_fix(est: Estimate) -> Suggestion | None:
    """4-bit weights quantized while a 16-bit checkpoint loads (`--quantization bitsandbytes`, vLLM's
    BitsAndBytesModelLoader), for a run that does not fit where FP8 weights are not to be had or do not fit
    either: the lever left on one card (a T4 has no FP8); slower decoding is no price for a little more KV.
    0.5 to 0.27 (BNB_FROM, QUANT_METHOD_REMOVED); MoE layers from BNB_MOE_FROM; NVIDIA cards of compute
    capability 7.0 and up (BitsAndBytesConfig.get_min_capability: 70; not a Pascal card); with tensor or
    pipeline parallelism from BNB_SPLIT_FROM. `--load-format bitsandbytes` goes with it: the 0.9 wheel's
    arg_utils.py sets it from the quantization, earlier releases asked for both, later ones accept it."""
    v, cc, s = est.profile.version, cc_number(est.compute_capability), est.settings
    split = s.tensor_parallel_size > 1 or s.pipeline_parallel_size > 1
    if s.quantization or est.spec.quantization or not BNB_FROM <= v < QUANT_METHOD_REMOVED["bitsandbytes"] \
            or (est.spec.moe and v < BNB_MOE_FROM) or cc is None or cc < BNB_MIN_CC or (split and v < BNB_SPLIT_FROM):
        return None
    return _with_len(est, {"quantization": "bitsandbytes"},
                     "4-bit weights quantized while the checkpoint loads (about a quarter of 16-bit's memory; slower "
                     "than an AWQ/GPTQ checkpoint of the same model, which needs no flag)", True, "",
                     [_flag("quantization", "bitsandbytes"), _flag("load-format", "bitsandbytes")])


def four_bit_checkpoint(est: Estimate, fixes: list[Suggestion]) -> Estimate | None:
    """The run with a 4-bit export of the model in place of the checkpoint it serves (modelled as the
    AWQ export a "…-AWQ" repo name reads as: 4 bits in groups of 128, api._name_format), where the
    weights crowd out the KV cache and no fix serves the whole context on the GPUs the run has: not a
    flag but a checkpoint to swap (vllm#41695: Qwen3-Coder-30B-A3B's FP8 weights, 29 GiB, on one 32 GB
    RTX 5090, where the only re-checked fix was a second GPU). None where the run fits, a fix already
    does so, the export would not fit either, the checkpoint is about as small already, the card is
    not NVIDIA's or lacks the kernel, or the model's KV layout is not modelled."""
    from dataclasses import replace

    have, tp = _known_gpus(est, None) or 0, est.settings.tensor_parallel_size
    if est.fits or est.spec.kv_unmodelled or est.reconciliation.failed \
            or any(x.keeps_goal and x.fits and _gpus_of(x.estimate) <= max(have, _gpus_of(est)) for x in fixes):
        return None
    cc, moe = cc_number(est.compute_capability), est.spec.moe is not None
    if est.gpu is None or est.gpu.vendor != "NVIDIA" or cc is None or cc < (AWQ_MOE_MIN_CC if moe else AWQ_MIN_CC) \
            or est.profile.version < (AWQ_MOE_FROM if moe else AWQ_FROM):
        return None
    spec = replace(est.spec, quantization={"quant_method": "awq", "_from_name": True})
    # on the run's own split, else split over more of the GPUs the user has (where that is known)
    splits = [{}] + [{"tensor_parallel_size": n} for n in _wider_splits(est) if _gpus_for(est, n) <= have]
    for split in splits:
        four = rerun(est, spec, quantization=None, **split)
        if four.fits:
            # the whole model's weights compared (per GPU × GPUs): the export must be the smaller checkpoint
            smaller = four.weights_bytes * four.settings.tensor_parallel_size * FOUR_BIT_SAVING <= est.weights_bytes * tp
            return four if smaller else None
    return None


def _last_resorts_last(out: list[Suggestion], goal: int) -> list[Suggestion]:
    """A fix that leaves under a quarter of the requested context (192 of 2,048 tokens) is not a
    working deployment while another fix serves all of it: it goes after the others."""
    if not any(s.estimate.max_model_len >= goal for s in out):
        return out
    short = [s for s in out if s.estimate.max_model_len * 4 < goal]
    return [s for s in out if s not in short] + short


def mamba_seqs(blocks: int) -> int:
    """The max_num_seqs a hybrid model's block count allows: vLLM refuses more running sequences than
    Mamba state blocks (one each; vllm/v1/worker/gpu_model_runner.py). Rounded down to a multiple of 64
    (a power of two below 64): a readable value that keeps most of the concurrency and still clears a
    block count that moves by a few between runs."""
    step = 64 if blocks >= 64 else 1 << (blocks.bit_length() - 1)
    return blocks // step * step


def _mamba_fixes(est: Estimate) -> list[Suggestion]:
    """Hybrid models need one state block per running sequence: max_num_seqs ≤ blocks."""
    blocks = est.gpu_blocks
    if blocks <= 0:
        return []
    seqs = mamba_seqs(blocks)
    sug = _with_len(est, {"max_num_seqs": seqs}, f"each running sequence of a hybrid model holds one state block; "
                    f"{blocks:,} blocks fit", True, flags=[_flag("max-num-seqs", seqs)])
    return [sug] if sug else []


def _activation_fixes(est: Estimate) -> list[Suggestion]:
    s, out = est.settings, []
    now = s.max_num_seqs or 256
    seqs = max(16, now // 4)
    e, ok, _ = _check(est, max_num_seqs=seqs)
    if ok and e.max_concurrency > 0:
        # More sequences than the KV cache can hold (with room for requests 4× shorter than
        # max_model_len) only cost sampler memory: size max_num_seqs to the cache.
        useful = 1 << max(4, math.ceil(math.log2(max(1.0, e.max_concurrency * 4))))
        seqs = min(seqs, useful)
    mllama_v0 = est.profile.engine == "v0" and est.spec.model_type.startswith("mllama")
    while mllama_v0 and e.error_kind == "no_cache_blocks" and seqs > 1:
        # V0 encodes one dummy image per max_num_seqs prompt (multimodal_profile._mllama_v0_encoder_peak): halve
        # the prompts until a block is left
        seqs //= 2
        e, ok, _ = _check(est, max_num_seqs=seqs)
    why = (f"V0's profile run encodes one dummy image per sequence (max_num_seqs of them at once); with {seqs} "
           "the vision tower's batch leaves room for the KV cache") if mllama_v0 else \
        (f"the profile run's sampler scales with max_num_seqs × vocab; {seqs} sequences are as many as this "
         "KV cache can serve at once")
    if seqs < now:      # a lever lowers the sampler's rows, never raises them (--max-num-seqs 8 stays)
        out.append(_with_len(est, {"max_num_seqs": seqs}, why, True, flags=[_flag("max-num-seqs", seqs)]))
    tb = max(2048, (s.max_num_batched_tokens or 8192) // 4)
    if tb < (s.max_num_batched_tokens or 0):
        # V0 refuses a batch smaller than max_model_len without chunked prefill ("max_num_batched_tokens
        # (…) is smaller than max_model_len (…)", vllm/config.py SchedulerConfig): the fix says both
        chunked = ["--enable-chunked-prefill"] if est.profile.engine == "v0" and not s.enable_chunked_prefill else []
        out.append(_with_len(est, {"max_num_batched_tokens": tb, "enable_chunked_prefill": True},
                             "the profile run's forward pass scales with max_num_batched_tokens", True,
                             flags=[_flag("max-num-batched-tokens", tb)] + chunked))
    # a lever that frees nothing (vllm#16570: V0 profiles the 32,768-token multimodal dummy prompt
    # whatever the batch) is no fix
    return [x for x in out if x and x.estimate.kv_cache_bytes > est.kv_cache_bytes]


def _window_fixes(est: Estimate) -> list[Suggestion]:
    """V1 reserves, per request, each windowed cache's window plus the tokens in flight
    (SlidingWindowSpec.max_admission_blocks_per_request: max_num_batched_tokens, × the batches in flight
    from 0.26). Where that reservation is a large part of one request's need — DeepSeek-V4's window and
    compressor-state caches (several GiB at 8,192–16,384 batched tokens), a sliding-window model at a long
    context — a smaller batch serves the asked context (slower prefill of long prompts)."""
    s = est.settings
    windowed = est.layout.dsv4 is not None or any(g.kind in ("sliding", "chunked") for g in est.layout.groups)
    tb = s.max_num_batched_tokens or 0
    if est.profile.engine != "v1" or est.fits or not windowed or tb <= 2048:
        return []
    for smaller in (tb // 2, tb // 4):
        if smaller < 1024:
            break
        sug = _with_len(est, {"max_num_batched_tokens": smaller},
                        f"each request's window caches hold their window plus the {window_tokens(s, est.profile):,} "
                        f"tokens in flight; {smaller:,} batched tokens shrink that reservation", True,
                        "long prompts prefill in smaller chunks, more slowly", [_flag("max-num-batched-tokens", smaller)])
        if sug and sug.keeps_goal:
            return [sug]
    return []


# The least KV memory a --limit-mm-per-prompt fix must free to be offered (a judgement, not vLLM's): above the
# spread of the modelled image-tower peaks against the logs' (0.1–0.3 GiB on the Qwen3.6 and Qwen2.5-VL image
# logs, multimodal_profile.encoder_profile) and above what a fixed-size tower's dummy batch leaves beside the LLM's run
# (Gemma 3 27B on 0.8.5: 32 images' outputs and float32 pixels, 0.37 GiB), so that such a gain is not
# promised as a fix that serves only text.
MM_LIMIT_MIN_GAIN = 512 * 2**20


# The least share of the card a limit on the media must spare, against raising the utilization alone, to be
# offered beside it: a judgement (0.05 of a 24 GB card is 1.2 GiB), not vLLM's figure.
MM_UTILIZATION_SAVING = 0.05


def _multimodal_fixes(est: Estimate) -> list[Suggestion]:
    """Multimodal models are profiled with max-size dummy images (and videos): when that reservation
    is what crowds out the KV cache, reserve for fewer items (vLLM's --limit-mm-per-prompt)."""
    spec, s = est.spec, est.settings
    if not spec.is_multimodal or not vision_encoder_peak(spec, est.profile, s, 2, [])[1]:
        return []
    limits = dict(s.limit_mm_per_prompt or {})
    video = bool(spec.config.get("video_token_id"))
    out: list[Suggestion | None] = []

    def frees(new: dict) -> bool:
        # a limit that frees less than MM_LIMIT_MIN_GAIN is no fix: the dummy outputs V1 keeps beside the
        # LLM's run are that small for fixed-size towers, and such a gain is within the estimate's own error
        return rerun(est, limit_mm_per_prompt=new).kv_cache_bytes - est.kv_cache_bytes >= MM_LIMIT_MIN_GAIN

    def offer(new: dict, why: str, caveat: str) -> None:
        sug = _with_len(est, {"limit_mm_per_prompt": new}, why, True, caveat, [_mm_flag(est, new)])
        out.append(sug)
        u = s.gpu_memory_utilization
        if (sug is None or not sug.keeps_goal) and u is not None and u < est.profile.default_utilization:
            # a utilization the user set below the default (a card shared on purpose): the limit with the
            # least utilization that then serves the whole context asks for less of the card than a
            # utilization raised on its own
            least = _least_fitting_utilization(est, round(u + 0.01, 2), MOST_UTILIZATION, limit_mm_per_prompt=new)
            alone = _least_fitting_utilization(est, round(u + 0.01, 2), MOST_UTILIZATION)
            # worth a limit on the media only where it spares a real share of the card (MM_UTILIZATION_SAVING)
            if least is not None and (alone is None or least <= alone - MM_UTILIZATION_SAVING):
                e, ok, _ = _check(est, limit_mm_per_prompt=new, gpu_memory_utilization=least)
                out.append(Suggestion(f"{_mm_flag(est, new)} {_flag('gpu-memory-utilization', least)}",
                                      {"limit_mm_per_prompt": new, "gpu_memory_utilization": least}, e,
                                      f"{why}; then {least:g} of the card serves the whole context", True,
                                      f"{caveat}; {_utilization_caveat(u, est.profile.default_utilization, _unified(est))}",
                                      ok=ok))

    if video and limits.get("video", 1) > 0:
        new = {**limits, "image": limits.get("image", 1), "video": 0}
        if frees(new):
            offer(new, "the profile run reserves memory for a max-size video as well as an image; with no videos, "
                  "nothing is reserved for them", "requests with videos are then refused")
    if any(v > 0 for v in {**{"image": 1}, **limits}.values()):
        new = {"image": 0, **({"video": 0} if video else {})}
        if frees(new):
            why = "text-only serving: no dummy images in the profile run"
            if vision_tower_skipped(spec, s.replace(limit_mm_per_prompt=new), est.profile):
                why += " and no vision tower loaded"       # multimodal_profile.TOWER_SKIP_FROM
            offer(new, why, "only if you send no images")
    return [x for x in out if x]


def _mm_flag(est: Estimate, limits: dict) -> str:
    """--limit-mm-per-prompt as the version parses it: `image=1,video=0` until 0.9 (vllm/engine/arg_utils.py
    nullable_kvs; 0.8.5 also takes JSON, and drops KEY=VALUE "in v0.10.0"), JSON from 0.10."""
    pairs = {k: int(v) for k, v in limits.items()}
    if est.profile.version < (0, 10, 0):
        return "--limit-mm-per-prompt " + ",".join(f"{k}={v}" for k, v in pairs.items())
    return f"--limit-mm-per-prompt '{json.dumps(pairs)}'"


def _graph_fixes(est: Estimate, kind: str) -> list[Suggestion]:
    """An OOM outside vLLM's budget: capture no graphs, or leave more of the card outside the budget.
    Where the version budgets the graphs (V1 0.20+, cuda_graphs.graphs_after_kv), eager mode only gives
    their memory to the KV cache: it avoids a capture OOM but leaves a runtime OOM's margin as it was."""
    budgeted = graphs_budgeted(est.profile, est.settings) and not graphs_after_kv(est.profile, est.settings)
    out: list[Suggestion | None] = []
    if not (budgeted and kind == "cuda_oom_runtime"):
        out.append(_with_len(est, {"enforce_eager": True}, "no CUDA graphs: " + (
            "nothing is captured, so the capture cannot run out of memory" if budgeted else
            "their memory is outside vLLM's budget in this version"), True, "slower decoding", ["--enforce-eager"]))
    if est.settings.kv_cache_memory_bytes:
        # the budget does not bound a fixed pool: only a smaller one leaves the graphs their room
        return [x for x in out if x] + _kv_memory_fixes(est)
    u0 = est.settings.gpu_memory_utilization or est.profile.default_utilization
    u = max(0.5, round(u0 - 0.05, 2))
    why = "leaves more room outside the budget for " + ("what runs outside it (warm-up, sampler)" if est.settings.enforce_eager
                                                        else "CUDA graphs and the sampler")
    printed = est.inputs.get("cuda_graph_bytes")
    if not budgeted and printed and est.gpu_total_bytes:
        # the graphs' size vLLM printed ("Estimated CUDA graph memory: 3.65 GiB"), taken out of the budget
        # with 0.01 of margin, as the opt-in message's "increase --gpu-memory-utilization from U to U + g/T"
        # says the other way round
        u = max(0.5, math.floor((u0 - printed / est.gpu_total_bytes - 0.01) * 100) / 100)
        why = (f"leaves the {printed / GiB:.2f} GiB of CUDA graphs vLLM estimated, and some margin, outside the "
               "budget")
    out.append(_with_len(est, {"gpu_memory_utilization": u}, why, True, flags=[_flag("gpu-memory-utilization", u)]))
    p, s = est.profile, est.settings
    if kind == "cuda_oom_graph" and not budgeted and p.engine == "v1" and p.version >= GRAPH_PROFILING_ENV_FROM \
            and not graphs_after_kv(p, s) and not s.enforce_eager:
        # 0.18–0.19 (gpu_worker.py): the estimate is measured but only subtracted when asked — vLLM's own
        # "To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"
        out.append(_with_len(est, {"graph_profiling": True},
                             "vLLM then subtracts its CUDA-graph estimate before sizing the KV cache, so the capture "
                             "fits in the budget (the default from 0.20)", True, "the KV cache gives up the graphs' share",
                             ["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"]))
    return [x for x in out if x]


def sampler_warmup_fixes(est: Estimate, requests: int, tried_bytes: int | None,
                         free_bytes: int | None) -> list[Suggestion]:
    """Fixes when V1's sampler warm-up ran out of memory ("… when warming up sampler with 1024 dummy
    requests"): after the KV cache and the graphs took their share, vLLM samples `requests` dummy
    rows over the whole vocabulary (gpu_model_runner.py _dummy_sampler_run) in what the budget
    leaves. Its allocations scale with the rows, so the largest power of two under requests × free /
    tried fits; or a lower utilization leaves the missing memory outside the budget."""
    s = est.settings
    rows = requests // 2
    if tried_bytes and free_bytes is not None and tried_bytes > 0:
        share = max(1, int(requests * free_bytes / tried_bytes))
        rows = 1 << (share.bit_length() - 1)
        rows = min(rows, requests // 2) if requests > 1 else 1
    out: list[Suggestion | None] = []
    if rows >= 1 and rows < (s.max_num_seqs or requests):
        need = f" (it needed {tried_bytes / GiB:.2f} GiB with {free_bytes / GiB:.2f} GiB free)" \
            if tried_bytes and free_bytes is not None else ""
        out.append(_with_len(est, {"max_num_seqs": rows},
                             f"vLLM warms its sampler up with max_num_seqs ({requests:,}) dummy requests over the "
                             f"{est.spec.vocab_size:,}-entry vocabulary after the KV cache is allocated{need}; "
                             f"{rows:,} need about {rows / requests:.0%} of that", True,
                             "fewer requests run at once", [_flag("max-num-seqs", rows)]))
    missing = (tried_bytes - free_bytes) if tried_bytes and free_bytes is not None else 0
    cut = math.ceil((missing / est.gpu_total_bytes + 0.01) * 100) / 100 if missing > 0 else 0.05
    u = round((s.gpu_memory_utilization or est.profile.default_utilization) - cut, 2)
    if u >= 0.5:
        out.append(_with_len(est, {"gpu_memory_utilization": u},
                             "leaves the sampler warm-up the memory it lacked outside vLLM's budget", True,
                             flags=[_flag("gpu-memory-utilization", u)]))
    return [x for x in out if x]


def host_memory_fixes(est: Estimate, cpu_swap_bytes: int) -> list[Suggestion]:
    """Fixes when the kernel's OOM killer ended vLLM ("Killed"): host RAM ran out, not GPU memory.

    On a board whose GPU shares the system's memory (Jetson), vLLM's budget (utilization × total)
    is taken from the RAM the OS and Python need: ask for the smallest share that still serves
    max_model_len, plus 0.02 of margin. V0 also pins `swap_space` GiB of CPU memory per GPU for
    swapped-out blocks (vllm/worker/cache_engine.py, "# CPU blocks"): --swap-space 0 frees it.
    The GPU-side levers (more utilization, more KV) would only make it worse."""
    out: list[Suggestion] = []
    s = est.settings
    u = s.gpu_memory_utilization or est.profile.default_utilization
    if est.gpu is not None and est.gpu.unified:
        least = _least_fitting_utilization(est, 0.05, round(u - 0.01, 2))
        target = round(least + 0.02, 2) if least is not None else u
        if target < u - 1e-9:
            freed = (u - target) * est.gpu_total_bytes
            e, ok, _ = _check(est, gpu_memory_utilization=target)
            out.append(Suggestion(_flag("gpu-memory-utilization", target), {"gpu_memory_utilization": target}, e,
                                  f"the GPU shares its memory with the OS: {freed / GiB:.2f} GiB less for vLLM is "
                                  f"{freed / GiB:.2f} GiB more for everything else; {target:g} still serves "
                                  f"{e.max_model_len:,}-token requests", True, ok=ok))
    if est.profile.engine == "v0" and cpu_swap_bytes > 0:
        e = rerun(est)
        out.append(Suggestion("--swap-space 0", {}, e,
                              f"V0 pins {cpu_swap_bytes / GiB:.2f} GiB of CPU memory per GPU for swapped-out KV blocks; "
                              "0 frees it (preempted requests are recomputed instead)", True))
    return out


def _kv_memory_fixes(est: Estimate, roomy: bool = False) -> list[Suggestion]:
    """--kv-cache-memory-bytes sets the KV pool itself: vLLM skips its profile run and the utilization's
    budget (v1/worker/gpu_worker.py determine_available_memory), so the pool asked for is the lever. As
    large as one request needs where the card has that room beside the weights, the warm-up's activations,
    non-torch memory and CUDA graphs; as small as that room where the pool asked for overruns it; with
    `roomy` (a run that starts and asks for more), the room itself, less a GiB of headroom. In whole GiB,
    written as vLLM's flag takes them ("4G" = 4 × 2^30 bytes, engine/arg_utils.py)."""
    s = est.settings
    if not s.kv_cache_memory_bytes:
        return []
    rest = est.non_kv_bytes
    room = est.startup_free_bytes - rest
    whole = room // GiB
    # a release that captures its graphs after sizing the pool has no estimate of them here
    graphs_later = not est.cuda_graph_bytes and not s.enforce_eager
    beside = (f"the weights, activations and non-torch memory ({rest / GiB:.2f} GiB)" if graphs_later else
              f"the weights, activations, non-torch memory and CUDA graphs ({rest / GiB:.2f} GiB)")
    later = "; the CUDA graphs, captured after the pool, need some of that room too" if graphs_later else ""
    if est.kv_cache_bytes > room:
        target = whole
        why = (f"the card has {room / GiB:.2f} GiB free beside {beside}, less than the "
               f"{est.kv_cache_bytes / GiB:.2f} GiB pool asked for{later}")
    elif roomy:
        target = whole - 1
        if target * GiB <= s.kv_cache_memory_bytes:
            return []
        why = (f"the card has {room / GiB:.2f} GiB free beside {beside}; {target} GiB leaves a GiB of it for "
               f"other processes and allocations outside vLLM's accounting{later}")
    else:
        # vLLM's admission check: one max_model_len request's KV, plus the block it keeps back from 0.29
        need = est.kv_needed_bytes + (est.layout.bytes_per_block if est.profile.reserved_block else 0)
        target = -(-need // GiB)
        if need <= s.kv_cache_memory_bytes or target > whole:
            return []
        why = (f"one {est.max_model_len:,}-token request needs {need / GiB:.2f} GiB of KV; the card has "
               f"{room / GiB:.2f} GiB free beside {beside}{later}")
    if target < 1:
        return []
    sug = _with_len(est, {"kv_cache_memory_bytes": target * GiB}, why, True,
                    flags=[f"--kv-cache-memory-bytes {target}G"])
    return [sug] if sug else []


def _free_memory_fixes(est: Estimate) -> list[Suggestion]:
    free = est.startup_free_bytes
    u = int(free / est.gpu_total_bytes * 100 - 1) / 100
    if u <= 0.1:
        return []
    sug = _with_len(est, {"gpu_memory_utilization": u}, "vLLM checks that the requested share of the card is free "
                    "at start; ask for less than what is free", True, flags=[_flag("gpu-memory-utilization", u)])
    return [sug] if sug else []


def _weights_fixes(est: Estimate, gpu_count: int | None) -> list[Suggestion]:
    out, beyond = _split_and_fp8_fixes(est, _known_gpus(est, gpu_count), "FP8 weights take about half the memory")
    return out + beyond


def full_context_plan(est: Estimate) -> dict | None:
    """What serving the whole requested context would take (KV needed; GPUs that would hold it: `gpus` in
    all, the pipeline and data parallelism kept; `have`, the GPUs the user has where known)."""
    if est.fits or any(x.keeps_goal and x.fits for x in _kv_memory_fixes(est)):
        return None         # (a fixed pool raised to the need serves it on these GPUs: a fix says so)
    need = est.kv_needed_bytes
    plans = []
    for tp in _wider_splits(est):       # (the run's own split, or a narrower one, holds less)
        e = rerun(est, tensor_parallel_size=tp)
        if e.fits:
            plans.append({"tensor_parallel_size": tp, "gpu": est.gpu_name, "kv_cache_tokens": e.kv_cache_tokens,
                          "max_concurrency": e.max_concurrency, "gpus": _gpus_for(est, tp)})
            break
    blocks = ceil_div(est.max_model_len, est.layout.block_size)
    return {"kv_needed_bytes": need, "blocks": blocks, "plans": plans, "have": _known_gpus(est, None)}


def _unified(est: Estimate) -> bool:
    """Is the card of `est` a unified board (its GPU memory the system's RAM)?"""
    return bool(est.gpu is not None and est.gpu.unified)


# what lists the processes holding a card's memory, by vendor: nvidia-smi knows only NVIDIA's cards (and
# lists no memory on a unified board, whose memory is the system's RAM)
_HOLDERS_TOOL = {"NVIDIA": "nvidia-smi", "AMD": "amd-smi or rocm-smi", "Intel": "xpu-smi", "Huawei": "npu-smi"}
_UNIFIED_HOLDERS = "free -h and top show them; nvidia-smi lists no memory there"


# a ROCm build or AMD's own tools named in the paste (a "vllm-rocm" image, "rocm/vllm", "rocm-smi")
_ROCM_WORD = re.compile(r"(?i)rocm|amd-smi")     # literal alternatives: linear on any input


def _card_kind(facts) -> tuple[str | None, bool]:
    """The card's vendor and whether its memory is the system's (a unified board), for a paste that
    may not name it: the card named, else the catalog cards whose size is the total vLLM printed
    where they agree (121.63 GiB is a GB10 alone), else a ROCm word for the vendor."""
    gpu = find_gpu(facts.get("gpu"))
    if gpu is not None:
        return gpu.vendor, gpu.unified
    total = facts.get("total_gpu_memory_gib")
    near = cards_near(int(float(total) * GiB), 0.02) if isinstance(total, (int, float)) and total > 0 else []
    vendors = {g.vendor for g in near}
    vendor = vendors.pop() if len(vendors) == 1 else None
    if vendor is None and _ROCM_WORD.search(facts.text or ""):
        vendor = "AMD"
    return vendor, bool(near) and all(g.unified for g in near)


def _holders_tool(facts) -> str:
    """The tool that shows which processes hold the card: vLLM names an Intel GPU's device "xpu:N"
    (a ROCm card is "cuda:N" too), else the card's vendor (`_card_kind`); NVIDIA's where nothing says."""
    if str(facts.extra.get("device") or "").startswith("xpu"):
        return _HOLDERS_TOOL["Intel"]
    return _HOLDERS_TOOL.get(_card_kind(facts)[0] or "", _HOLDERS_TOOL["NVIDIA"])


# vLLM 0.2.0–0.2.1 refused a context whose attention logits — one float32 per token of the context
# padded to the block size — exceed the GPU's shared memory per block (worker.py
# _check_if_can_support_max_seq_len, vllm PR #1154: `padded × 4 > max_shared_mem` raises; the
# message's "required" figure adds a 512-float buffer for the kernel's other shared arrays). 0.2.2
# switches long contexts to PagedAttention V2 instead (vllm PR #1510).
SHARED_MEM_BUFFER_FLOATS = 512


def shared_memory_max_len(available: int, block_size: int) -> int:
    """The longest max_model_len vLLM's check accepts: (L + block_size − 1) × 4 B ≤ `available`."""
    return available // 4 - (block_size - 1)


def shared_memory_fixes(facts, est: Estimate | None) -> list[dict]:
    """The context length the attention kernel of 0.2.0–0.2.1 can hold (a round one that also
    leaves the kernel's buffer), re-checked against the KV cache where the model is known, and the
    upgrade that removes the limit."""
    x, f = facts.extra, facts.get
    avail, bs = x.get("shared_mem_available"), int(f("block_size") or 16)
    if not isinstance(avail, (int, float)):
        return []
    cap = shared_memory_max_len(int(avail), bs)
    target = friendly_len(cap - SHARED_MEM_BUFFER_FLOATS)
    why = (f"vLLM 0.2.0–0.2.1 keeps one float per context token in the GPU's shared memory and checks "
           f"(max_model_len + {bs - 1}) × 4 B against the {int(avail):,} B it has: at most {cap:,} tokens; "
           f"{target:,} also leaves the {SHARED_MEM_BUFFER_FLOATS}-float buffer its message counts for the kernel")
    out: list[dict] = []
    if est is not None:
        e = rerun(est, max_model_len=target)
        out.append(Suggestion(_flag("max-model-len", target), {"max_model_len": target}, e, why, False).to_json())
    else:
        out.append({"flags": _flag("max-model-len", target), "checked": False, "why": why})
    out.append({"flags": "", "checked": False,
                "why": "or upgrade vLLM: from 0.2.2 long contexts run on PagedAttention V2 (vllm PR #1510), "
                       "which has no such limit"})
    return out


# How facts_fixes words a capacity under an eighth of the length asked for (the summary leads with it)
STUB_CONTEXT = "under an eighth"


def facts_fixes(facts) -> list[dict]:
    """Fixes that follow from vLLM's own printed numbers alone (no model config to re-check with).

    They are labelled unchecked: the capacity vLLM printed bounds --max-model-len for V0 (and the
    estimated maximum length for V1) only while the other settings stay as they were.
    """
    f = facts.get
    kind = facts.error_kind
    out: list[dict] = []
    if facts.extra.get("shared_mem_available") is not None:
        return shared_memory_fixes(facts, None)
    if kind in ("kv_capacity_v0", "kv_capacity_v1"):
        cap = f("estimated_max_model_len") if kind == "kv_capacity_v1" else f("error_max_tokens_in_kv")
        cap = cap or f("error_max_tokens_in_kv") or f("estimated_max_model_len")
        need, avail, length = f("kv_needed_gib"), f("kv_available_gib"), f("max_model_len")
        if cap:
            target = friendly_len(int(cap))
            out.append({"flags": f"--max-model-len {target}", "checked": False,
                        "why": f"vLLM itself said at most {int(cap):,} tokens fit with these settings"})
            if length and int(cap) * 8 <= int(length):
                # a stub of the context asked for: a shorter length "fits" but serves nothing useful
                # what would make room, less what the run already does
                u, kv_dtype = f("gpu_memory_utilization"), str(f("kv_cache_dtype") or "auto").lower()
                ways = []
                if not isinstance(u, (int, float)):
                    ways.append("a higher --gpu-memory-utilization")
                elif u < MOST_UTILIZATION:
                    ways.append(f"a higher --gpu-memory-utilization (now {float(u):g})")
                ways += ["more GPUs (--tensor-parallel-size)",
                         "a smaller checkpoint" if f("quantization") else "a smaller or quantized checkpoint"]
                if not kv_dtype.startswith(("fp8", "int8", "int4", "nvfp4")):
                    ways.append("an fp8 KV cache (--kv-cache-dtype fp8)")
                out.append({"flags": "", "checked": False,
                            "why": f"{int(cap):,} tokens is {STUB_CONTEXT} of the {int(length):,} asked for: the "
                                   "weights and the profile run took nearly all of vLLM's budget, so a useful context "
                                   "needs more memory for the KV cache — " + ", ".join(ways[:-1]) + " or " + ways[-1]})
        elif need and avail and length and float(avail) < float(need):
            # no estimate printed (before 0.8.5, or cut off): the need grows with the context
            target = friendly_len(int(int(length) * float(avail) / float(need)))
            out.append({"flags": f"--max-model-len {target}", "checked": False,
                        "why": f"vLLM has {avail} of the {need} GiB that {int(length):,} tokens need; where the KV "
                               f"grows with the context, about {target:,} tokens fit"})
        out += _shortfall_utilization(facts)
    if kind in ("cuda_oom_graph", "cuda_oom_runtime"):
        # outside vLLM's budget: CUDA graphs and the sampler warm-up use the (1 − u) × total it leaves
        u, total = f("gpu_memory_utilization"), f("total_gpu_memory_gib")
        warmup = facts.extra.get("sampler_warmup_requests")
        if kind == "cuda_oom_graph" and isinstance(warmup, int) and warmup > 1:
            out.append({"flags": f"--max-num-seqs {warmup // 2}", "checked": False,
                        "why": f"the sampler warm-up that failed samples max_num_seqs ({warmup:,}) dummy requests "
                               "over the whole vocabulary; half as many need half the memory"})
        elif kind == "cuda_oom_graph":
            out.append({"flags": "--enforce-eager", "checked": False,
                        "why": "no CUDA graphs are captured (slower decoding), so their memory is not needed"})
        if u is not None and float(u) > 0.55:
            lower = round(float(u) - 0.05, 2)
            left = (f": at {float(u):g} of {float(total):.2f} GiB, {(1 - float(u)) * float(total):.2f} GiB was left for "
                    "them and for any other process on the card") if total else ""
            out.append({"flags": f"--gpu-memory-utilization {lower:.2f}", "checked": False,
                        "why": "graphs and the sampler warm-up run outside vLLM's budget" + left})
    if kind == "other" and facts.extra.get("host_killed"):
        if facts.extra.get("cpu_blocks") or facts.extra.get("engine") == "v0":
            out.append({"flags": "--swap-space 0", "checked": False,
                        "why": "V0 pins swap_space GiB (4 by default) of CPU memory per GPU for swapped-out KV blocks "
                               "(the \"# CPU blocks\" it printed); 0 frees that host RAM"})
        if _card_kind(facts)[1]:
            out.append({"flags": "", "checked": False,
                        "why": "lower --gpu-memory-utilization: this board's GPU memory is the system's RAM, so every "
                               "GiB vLLM budgets is one the operating system cannot use"})
    if kind == "cuda_oom_load":
        out += _load_oom_fixes(facts)
    if kind == "no_cache_blocks":
        out += _budget_short_fixes(facts)
    blocks, seqs = f("gpu_blocks"), f("max_num_seqs")
    if kind == "mamba_blocks" and isinstance(blocks, int) and blocks > 0:
        fewer = mamba_seqs(blocks)
        asked = f" for the {seqs:,} sequences max_num_seqs allows" if isinstance(seqs, int) else ""
        out.append({"flags": f"--max-num-seqs {fewer}", "checked": False,
                    "why": f"each running sequence holds one Mamba state block: vLLM has {blocks:,} blocks{asked}; "
                           f"{fewer} is a round value under that"})
    if kind == "free_memory_startup" and f("free_memory_gib") and f("total_gpu_memory_gib"):
        free, total = float(f("free_memory_gib")), float(f("total_gpu_memory_gib"))
        held = total - free
        u = int((free / total) * 100 - 1) / 100
        if facts.extra.get("windows_host"):
            # WSL2 / Windows: the card also drives the desktop
            why = f"{held:.2f} GiB of this GPU is held by {WINDOWS_HOLDERS}; close them or ask for less"
        elif _card_kind(facts)[1]:
            # vLLM's free memory on a unified board is the system's (vllm/utils/mem_utils.py MemorySnapshot,
            # the 0.28.0 wheel: psutil's available memory where the platform says the GPU is integrated)
            why = (f"{held:.2f} GiB of this board's memory is in use: it is the system's RAM, so the operating system "
                   f"and every other process count ({_UNIFIED_HOLDERS}); stop what you can or ask for less")
        else:
            why = (f"another process holds {held:.2f} GiB of this GPU: stop it ({_holders_tool(facts)} shows which) "
                   "or move vLLM to a free GPU")
        out.append({"flags": "", "checked": False, "why": why})
        if u >= 0.05:
            out.append({"flags": f"--gpu-memory-utilization {u:.2f}", "checked": False,
                        "why": f"ask for less than the {free:.2f} GiB that is free ({free:.2f}/{total:.2f} = "
                               f"{free / total:.3f}); enough only if the model fits in it"})
    out += config_error_fixes(facts)
    return out


def _card_size(facts) -> tuple[float, str] | None:
    """The card's memory as torch reports it, in GiB, for arithmetic on vLLM's printed figures: the total
    the paste gives (derive.torch_total_from_facts: vLLM's own, or nvidia-smi's as torch sees it), else
    the catalog's for the card the paste names where the name fixes its size (gpus.sized_gpu); with what
    to call it."""
    from estimator.derive import torch_total_from_facts

    printed = torch_total_from_facts(facts)
    if printed is not None and printed[0] > 0:
        return printed[0] / GiB, "this GPU"
    gpu = sized_gpu(facts.get("gpu"))
    return (gpu.total_bytes / GiB, gpu.name) if gpu is not None else None


def _shortfall_utilization(facts) -> list[dict]:
    """V1's capacity error printed what one request needs and what vLLM had ("X GiB KV cache is needed,
    which is larger than the available KV cache memory (Y GiB)"): the budget is utilization × total and
    nothing else in it grows with the utilization (vllm/v1/worker/gpu_worker.py), so X − Y more of the
    card closes the gap — in steps of 0.01, with the two printed figures' rounding (0.005 GiB each) on top.
    Needs the card's size (printed, or the card the paste names); offered as a flag up to MOST_UTILIZATION where the
    run's utilization is known, as the step to add where it is not (with the utilization it must start
    from, and not where only a run at 0.05 or less could take it)."""
    f = facts.get
    need, avail, length = f("kv_needed_gib"), f("kv_available_gib"), f("max_model_len")
    if not all(isinstance(v, (int, float)) for v in (need, avail)) or float(avail) >= float(need):
        return []
    size = _card_size(facts)
    if size is None:
        return []
    total, card = size
    short = float(need) - float(avail) + 2 * HALF_HUNDREDTH
    step = math.ceil(short / total * 100 - 1e-9) / 100
    request = f"one {int(length):,}-token request" if isinstance(length, (int, float)) else "one full-length request"
    head = (f"vLLM needs {float(need):.2f} GiB of KV for {request} and had {float(avail):.2f} GiB: the "
            f"{short:.2f} GiB more (with the printed figures' rounding) is {step:.2f} of the {total:.2f} GiB of {card}, "
            "and nothing else in vLLM's budget grows with it")
    caveat = ("; " + UNIFIED_RAISE if _card_kind(facts)[1]
              else "; leave headroom for CUDA graphs and other processes")
    u, most = f("gpu_memory_utilization"), MOST_UTILIZATION
    if not isinstance(u, (int, float)) or not 0 < u <= 1:     # not shown, or no utilization vLLM accepts
        if step > most - 0.05:
            return []
        return [{"flags": "", "checked": False,
                 "why": f"raise --gpu-memory-utilization by {step:.2f} or more from the run's (enough only where the "
                        f"run's is {most - step:.2f} or less, {most} being the most to ask for): {head}{caveat}"}]
    target = round(float(u) + step, 2)
    if target > most + 1e-9:
        return []
    return [{"flags": _flag("gpu-memory-utilization", f"{target:.2f}"), "checked": False,
             "why": f"{head} ({float(u):g} + {step:.2f}){caveat}"}]


def printed_pool_fixes(facts, est: Estimate) -> list[dict]:
    """A start-up log whose figures the model does not reproduce: the utilization step for more KV cache
    on vLLM's own numbers instead of the model's state (whose token figures may not be vLLM's at all).

    vLLM's budget is utilization × total, and what else it holds (weights, the profile peak,
    non-torch memory, graphs where budgeted) does not change with the utilization
    (vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/worker/worker.py for V0), so the
    pool it printed grows by Δu × total and holds tokens, and concurrency, in proportion (blocks of one
    size). The step is the one a run that starts gets (_roomy_utilization), else the least one above
    the run's. Needs the printed pool (or V0's printed blocks, whose pool is the blocks times the block's
    bytes) and what it holds (tokens, blocks or the concurrency). Not where other processes are charged to
    the budget, nor for 0.34's extensible cache, which sizes after warmup with its own margin."""
    f = facts.get
    pool, conc, length = f("kv_cache_gib"), f("max_concurrency"), f("max_model_len") or est.max_model_len
    tokens, blocks = f("kv_tokens_capacity"), f("gpu_blocks")
    printed, now = "pool it printed", "it printed"
    if isinstance(blocks, int) and blocks > 0 and est.profile.engine == "v0":
        # V0's "# GPU blocks": its tokens, and its pool where not printed (in the model's block size)
        if not tokens:
            tokens, now = blocks * est.layout.block_size, f"now {blocks:,} blocks × {est.layout.block_size} ="
        if not isinstance(pool, (int, float)):
            pool = blocks * est.layout.bytes_per_block / GiB
            printed = f"pool of the {blocks:,} blocks it printed ({est.layout.bytes_per_block / 2**20:.2f} MiB each)"
    conc = conc if isinstance(conc, (int, float)) and conc > 0 else None
    s = est.settings
    if not isinstance(pool, (int, float)) or pool <= 0 or not (tokens or conc) or not est.gpu_total_bytes \
            or est.others_charged_bytes or extensible_kv_cache(est.profile, s, est.gpu_name):
        return []
    if pool * GiB >= est.gpu_total_bytes:
        return []          # a pool larger than the card: the card (or the block's size) is not the run's
    u, cap = s.gpu_memory_utilization or est.profile.default_utilization, MOST_UTILIZATION
    target = _roomy_utilization(est, u, cap) or round(u + 0.02, 2)
    if target > cap + 1e-9:
        return []
    total = est.gpu_total_bytes / GiB
    grow = (target - u) * total
    ratio = (pool + grow) / pool
    held = [f"about {_three_figures(tokens * ratio):,} tokens ({now} {int(tokens):,})"] if tokens else []
    held += [f"{conc * ratio:.2f}× concurrency at {int(length):,} tokens (it printed {conc:.2f}×)"] if conc else []
    why = (f"vLLM's budget grows by ({target:g} − {u:g}) × {total:.2f} GiB = {grow:.2f} GiB, all of it KV cache "
           f"(nothing else in the budget changes), so the {pool:.2f} GiB {printed} becomes "
           f"{pool + grow:.2f} GiB: " + ", ".join(held))
    return [{"flags": _flag("gpu-memory-utilization", target), "checked": False,
             "why": f"{why}; {_utilization_caveat(u, est.profile.default_utilization, _unified(est))}"}]


def _three_figures(x: float) -> int:
    """A proportion's result to three significant figures: more would claim the block arithmetic."""
    if x < 1000:
        return int(x)
    step = 10 ** (len(str(int(x))) - 3)
    return int(x) // step * step


def _budget_short_fixes(facts) -> list[dict]:
    """No KV cache blocks, with vLLM's profiling line printed: the KV share it printed (≤ 0) says by how
    much the budget fell short of what everything else took, so the utilization that starts to leave the
    KV cache memory follows from it (budget = total × utilization, vllm/worker/worker.py and
    vllm/v1/worker/gpu_worker.py; the total printed, or the named card's: _card_size). How much more
    max_model_len needs is the model's KV per token."""
    f = facts.get
    u, kv, size = f("gpu_memory_utilization"), f("kv_cache_gib"), _card_size(facts)
    if not all(isinstance(v, (int, float)) for v in (u, kv)) or size is None or kv > 0:
        return []
    total = size[0]
    budget = facts.extra.get("budget_gib") or u * total
    used = budget - kv
    least = used / total
    short = f"{-kv:.2f} GiB short of" if kv < 0 else "used up by"
    head = (f"vLLM's budget ({u:g} × {total:.2f} GiB = {budget:.2f} GiB) was {short} what the weights, activations "
            f"and the rest took ({used:.2f} GiB)")
    if least < MOST_UTILIZATION:
        return [{"flags": "", "checked": False,
                 "why": f"{head}: a --gpu-memory-utilization above {least:.2f} ({used:.2f} / {total:.2f}) leaves the KV "
                        f"cache memory, {0.01 * total:.2f} GiB for each 0.01 more; how much max_model_len needs "
                        "follows from the model id"}]
    return [{"flags": "", "checked": False,
             "why": f"{head}: that is {least:.0%} of the card, so no utilization leaves room for a KV cache; the "
                    "weights need more GPUs (--tensor-parallel-size) or a smaller checkpoint"}]


def _load_oom_fixes(facts) -> list[dict]:
    """A weight-loading OOM from torch's own numbers: whether other processes held the card (free it)
    or, with nothing else on it, the weights being created filled it themselves (more GPUs).
    torch's message: "this process has X in use", "Of the allocated memory Y is allocated by PyTorch"."""
    from estimator.paste import torch_oom_records

    oom, tp = (torch_oom_records(facts) or [{}])[0], facts.get("tensor_parallel_size")
    total, free = oom.get("total_capacity_gib"), oom.get("free_gib")
    mine, torch_bytes = oom.get("this_process_in_use_gib"), oom.get("allocated_by_pytorch_gib")
    out: list[dict] = []
    if not isinstance(total, (int, float)) or total <= 0:
        return out
    others = total - free - mine if isinstance(free, (int, float)) and isinstance(mine, (int, float)) else None
    if others is not None and others > max(1.0, 0.1 * total):
        out.append({"flags": "", "checked": False,
                    "why": f"other processes hold {others:.2f} GiB of this {total:.2f} GiB GPU ({total:.2f} total − "
                           f"{free:.2f} free − {mine:.2f} this process): stop them ({_holders_tool(facts)} shows which) or move "
                           "vLLM to a free GPU"})
    elif isinstance(torch_bytes, (int, float)) and torch_bytes >= 0.5 * total:
        # nothing else held the card: the weights alone outgrew it
        more = 2 * tp if isinstance(tp, int) and tp > 1 else 2
        out.append({"flags": f"--tensor-parallel-size {more}", "checked": False,
                    "why": f"the weights being created had already filled {torch_bytes:.2f} GiB of the {total:.2f} GiB "
                           f"card: they need at least {more} GPUs (how many exactly, and whether a quantized "
                           "checkpoint fits on fewer, follows from the model id)"})
    return out


def _version_of(facts) -> tuple[int, int, int]:
    """The paste's vLLM version (the newest when it does not say or cannot be read)."""
    from estimator.errors import BadInput
    from estimator.vllm import parse_version

    try:
        return parse_version(facts.get("vllm_version"))
    except BadInput:
        return parse_version(None)


def config_error_fixes(facts) -> list[dict]:
    """The standard fixes for the start-up errors that are about settings, not memory: they follow
    from the numbers vLLM printed (vllm/config checks), so no memory arithmetic is involved."""
    f, x = facts.get, facts.extra
    kind = facts.error_kind
    out: list[dict] = []
    tp, heads = f("tensor_parallel_size"), x.get("num_heads")
    if kind == "tp_divisibility" and isinstance(tp, int) and isinstance(heads, (int, float)) and tp > 1:
        heads = int(heads)
        # the largest TP that splits the heads and the GPUs: pipeline stages take the rest — from 0.5.1,
        # the first release with pipeline parallelism in the engine (vllm PR #4412)
        d = math.gcd(heads, tp)
        if _version_of(facts) < (0, 5, 1):
            if d > 1:
                out.append({"flags": f"--tensor-parallel-size {d}", "checked": False,
                            "why": f"{d} GPUs split the {heads} heads evenly (this vLLM has no pipeline parallelism "
                                   "for the other GPUs: it came in 0.5.1)"})
        else:
            # TP stated even when 1: the fix replaces the TP that failed, it is not added beside it
            flags = f"--tensor-parallel-size {d}" + (f" --pipeline-parallel-size {tp // d}" if tp // d > 1 else "")
            why = (f"{d} tensor-parallel GPUs split the {heads} heads evenly and {tp // d} pipeline stages use the "
                   f"other GPUs" if d > 1 else
                   f"no tensor-parallel size above 1 divides both {heads} and {tp}: {tp} pipeline stages split the "
                   "layers instead, with no head split")
            out.append({"flags": flags, "checked": False, "why": why})
        fewer = max((k for k in range(2, tp) if heads % k == 0), default=0)
        if fewer and fewer != d:
            out.append({"flags": f"--tensor-parallel-size {fewer}", "checked": False,
                        "why": f"{fewer} GPUs split the {heads} heads evenly (check the model still fits on {fewer})"})
    elif kind == "tp_divisibility" and isinstance(x.get("num_layers"), (int, float)) \
            and isinstance(f("pipeline_parallel_size"), int) and f("pipeline_parallel_size") > 1:
        # layers not divisible by the pipeline size (with or without tensor parallelism)
        layers, pp = int(x["num_layers"]), f("pipeline_parallel_size")
        ok = max(k for k in range(1, pp + 1) if layers % k == 0)
        out.append({"flags": f"--pipeline-parallel-size {ok}", "checked": False,
                    "why": f"{ok} stages split the {layers} layers evenly"})
    elif kind == "tp_divisibility" and isinstance(tp, int) and tp > 1:
        out.append({"flags": f"--tensor-parallel-size {max(1, tp // 2)}", "checked": False,
                    "why": "a quantized layer's groups do not split this many ways; fewer tensor-parallel GPUs "
                           "give each a whole number of groups"})
    if kind == "bf16_compute_capability":
        cc = x.get("compute_capability")
        out.append({"flags": "--dtype half", "checked": False,
                    "why": (f"this GPU (compute capability {cc}) " if cc else "this GPU ") +
                           "has no bfloat16 support (it needs 8.0, Ampere); float16 runs the same weights — a few "
                           "models trained in bf16 overflow in fp16, so check the first outputs"})
    derived = x.get("derived_max_model_len")
    if kind == "max_model_len_derived" and isinstance(derived, (int, float)):
        cap = int(derived)
        key = x.get("derived_key")
        where = f" ({key}={cap:,})" if key and key != "None" else f" ({cap:,})"
        out.append({"flags": f"--max-model-len {cap}", "checked": False,
                    "why": f"the longest context the model's config allows{where}"})
        out.append({"flags": "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "checked": False,
                    "why": "lets vLLM go past the config's length (an environment variable); only for a model that "
                           "really handles longer contexts (RoPE scaling), else its outputs degrade"})
    out += _settings_check_fixes(facts)
    return out


def _settings_check_fixes(facts) -> list[dict]:
    """The settings vLLM's scheduler and Mamba-cache checks ask for (paste.SETTINGS_CHECKS), from the numbers
    in their messages. A larger batch also raises the profile run's peak a little: the KV cache gets less."""
    src = facts.values.get("error_kind")
    check = src.source if src is not None and src.value == "other" else None
    f, x = facts.get, facts.extra
    tb, bigger = f("max_num_batched_tokens"), "a larger batch also raises the profile run's peak: a little less KV cache"
    if check == "mamba_align" and isinstance(x.get("align_block_size"), (int, float)):
        block = int(x["align_block_size"])
        return [{"flags": f"--max-num-batched-tokens {mamba_align_batch(block)}", "checked": False,
                 "why": f"at least the {block:,}-token attention block (a power of two at or above it); {bigger}"},
                {"flags": "--no-enable-prefix-caching", "checked": False, "why": f"{NO_ALIGN_WHY}; {NO_ALIGN_COST}"}]
    if check == "lora_rank" and isinstance(x.get("lora_rank"), (int, float)):
        rank, v = int(x["lora_rank"]), _version_of(facts)
        fit = next((r for r in sorted(LORA_RANK_FROM) if r >= rank), None)
        if fit is None:
            return []
        taken = ", ".join(str(r) for r in sorted(LORA_RANK_FROM) if LORA_RANK_FROM[r] <= v)
        if not facts.get("vllm_version"):
            # the release is not known: the values by the release that brought them
            return [{"flags": f"--max-lora-rank {fit}", "checked": False,
                     "why": (f"the adapter's rank{'' if fit == rank else ', rounded up to a value vLLM takes'} (vLLM takes "
                             "8, 16, 32 and 64, from 0.5.5 also 128 and 256, from 0.8.0 also 320 and 512); its LoRA "
                             "buffers grow with the rank (a little more GPU memory)")}]
        if LORA_RANK_FROM[fit] > v:
            return [{"flags": f"--max-lora-rank {fit}", "checked": False,
                     "why": (f"the adapter's rank needs vLLM {version_text(LORA_RANK_FROM[fit])} or later, the first "
                             f"to take {fit}; vLLM {version_text(v)} takes only {taken}")}]
        return [{"flags": f"--max-lora-rank {fit}", "checked": False,
                 "why": (f"the adapter's rank{'' if fit == rank else ', rounded up to a value vLLM takes'} (vLLM "
                         f"{version_text(v)} takes {taken}); its LoRA buffers grow with the rank (a little more GPU "
                         "memory)")}]
    length, seqs = f("max_model_len"), f("max_num_seqs")
    if check == "tb_lt_len" and isinstance(length, int):
        return [{"flags": "--enable-chunked-prefill", "checked": False,
                 "why": "vLLM then splits a long prompt over several batches of max_num_batched_tokens"},
                {"flags": f"--max-num-batched-tokens {length}", "checked": False,
                 "why": f"a batch that holds a whole {length:,}-token prompt; {bigger}"}]
    if check == "tb_lt_seqs" and isinstance(seqs, int) and isinstance(tb, int):
        return [{"flags": f"--max-num-seqs {tb}", "checked": False,
                 "why": f"no more running sequences than the {tb:,} tokens a batch holds"},
                {"flags": f"--max-num-batched-tokens {seqs}", "checked": False,
                 "why": f"a token of the batch for each of the {seqs:,} sequences; {bigger}"}]
    return []
