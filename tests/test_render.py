"""Acceptance tests for the reply (issue 5, estimator/render.py): Slack Block Kit limits on the
longest dev paste (and every other one), the markdown table, plain text, and secrets redacted in
every format — including `kvdoctor explain --json`'s reply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from estimator.diagnosis import diagnose
from estimator.render import breakdown_rows, redact, render_markdown, render_slack, render_text

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "examples" / "seed-post.txt"
CORPUS = ROOT.parent / "shared" / "corpus" / "dev.jsonl"
CASES = [json.loads(x) for x in CORPUS.read_text().splitlines() if x.strip()] if CORPUS.exists() else []
needs_corpus = pytest.mark.skipif(not CASES, reason=f"dev corpus not found at {CORPUS}")

# Slack's Block Kit limits (api.slack.com/reference/block-kit): ≤ 50 blocks per message, a section's
# text ≤ 3,000 characters, a context block ≤ 10 elements; `text` is the notification fallback.
MAX_BLOCKS = 50
SECTION_TEXT = 3000
CONTEXT_ELEMENTS = 10


def assert_block_kit(payload: dict) -> None:
    assert isinstance(payload.get("text"), str) and payload["text"].strip(), "no fallback text"
    blocks = payload["blocks"]
    assert 0 < len(blocks) <= MAX_BLOCKS, len(blocks)
    for b in blocks:
        assert b["type"] in ("section", "context", "divider", "header", "actions", "rich_text"), b["type"]
        if b["type"] == "section":
            t = b["text"]
            assert t["type"] in ("mrkdwn", "plain_text")
            assert 0 < len(t["text"]) <= SECTION_TEXT, len(t["text"])
            for field in b.get("fields", []):
                assert len(field["text"]) <= 2000
        if b["type"] == "context":
            assert 0 < len(b["elements"]) <= CONTEXT_ELEMENTS
            for el in b["elements"]:
                assert 0 < len(el.get("text", "x")) <= SECTION_TEXT
    json.dumps(payload)


@needs_corpus
def test_slack_limits_on_the_longest_dev_paste():
    longest = max(CASES, key=lambda c: len(c["paste"]))
    d = diagnose(longest["paste"], offline=True, explain=True)
    assert d is not None
    assert_block_kit(render_slack(d))


@needs_corpus
def test_slack_limits_on_a_very_long_reply():
    """All dev pastes glued together: the longest paste any surface may get in one message."""
    text = "\n\n".join(c["paste"] for c in CASES) + "\n" + SEED.read_text()
    d = diagnose(text, offline=True, explain=True)
    assert_block_kit(render_slack(d))


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_slack_limits_on_every_dev_paste(case):
    d = diagnose(case["paste"], offline=True, explain=True)
    assert_block_kit(render_slack(d))


def test_slack_reply_of_the_seed_carries_the_numbers():
    d = diagnose(SEED.read_text(), offline=True)
    payload = render_slack(d)
    assert_block_kit(payload)
    body = json.dumps(payload)
    assert "73,792" in body and "184.94" in body and "--max-model-len" in body
    assert "**" not in payload["text"]  # Slack mrkdwn bold is *x*, not **x**


def _table(md: str) -> list[str]:
    return [ln for ln in md.splitlines() if ln.startswith("|")]


def test_markdown_reply_has_a_table():
    d = diagnose(SEED.read_text(), offline=True)
    md = render_markdown(d)
    rows = _table(md)
    assert len(rows) >= 3, md
    header, sep, *body = rows
    assert header.startswith("| ") and sep.startswith("|---")
    ncols = header.count("|")
    assert sep.count("|") == ncols
    for r in body:
        assert r.count("|") - r.count("\\|") == ncols, r
    # Each figure says where it comes from.
    assert all(any(p in r for p in ("read", "derived", "estimated", "assumed")) for r in body)
    kv_row = next(r for r in body if "KV cache pool" in r)
    assert "13.51" in kv_row and "derived" in kv_row
    # The KV formula with the user's numbers filled in.
    assert "48 layers" in md and "8 KV heads" in md and "128" in md and "196,608" in md


def test_a_settings_error_is_headed_as_a_fix_in_slack_as_in_markdown():
    """Heads not divisible by TP: the fix is a setting vLLM accepts, not an unchecked guess, in both
    formats (Slack said "Likely fix (not re-checked)" while markdown said "Fixes")."""
    d = diagnose("$ vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B --tensor-parallel-size 8\n"
                 "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).\n",
                 offline=True, explain=True)
    assert "**Fixes** (settings vLLM accepts" in render_markdown(d)
    sections = [b["text"]["text"] for b in render_slack(d)["blocks"] if b.get("type") == "section"]
    assert any(t.startswith("*Fix* (a setting vLLM accepts): `--tensor-parallel-size 4") for t in sections)
    assert not any("Likely fix" in t for t in sections)


def test_text_reply_has_no_markdown_markers():
    d = diagnose(SEED.read_text(), offline=True)
    text = render_text(d)
    assert "**" not in text and "`" not in text
    assert "184.94" in text


# ------------------------------------------------------------------------------------------------
# Secrets
# ------------------------------------------------------------------------------------------------
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123"
XOXB = "xoxb-" + "1234567890123-0987654321098-AbCdEfGhIjKlMnOpQrStUvWx"
SK = "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345"
BEARER = "eyJhbGciOiJIUzI1NiJ9" + ".abcDEFghiJKLmnoPQR"
SECRETS = (HF, XOXB, SK, BEARER)


def _secret_paste() -> str:
    """The seed post with tokens where a reply would echo them: inside the two claims the reply
    quotes, in the command line, and in a header."""
    seed = SEED.read_text()
    seed = seed.replace("(please correct me if that’s inaccurate)",
                        f"(please correct me if that’s inaccurate; HF_TOKEN={HF})")
    seed = seed.replace("the weights should take ~14GB.", f"the weights should take ~14GB. Slack bot {XOXB}")
    return seed + (f"\nvllm serve Qwen/Qwen2.5-14B-Instruct-1M --dtype auto --api-key {SK}\n"
                   f"curl -H 'Authorization: Bearer {BEARER}' http://localhost:8000/v1/models\n")


def _assert_clean(text: str) -> None:
    for s in SECRETS:
        assert s not in text
        assert s[:12] not in text, f"part of a secret left: {s[:12]}"


def test_secrets_redacted_in_every_format():
    paste = _secret_paste()
    assert all(s in paste for s in SECRETS)
    d = diagnose(paste, offline=True)
    assert d is not None and d.error_kind == "kv_capacity_v0"
    md = render_markdown(d)
    # The claims are quoted back, so the redaction is what keeps the tokens out.
    assert "~28GB" in md and "[redacted]" in md
    _assert_clean(md)
    _assert_clean(render_markdown(d, flavour="discourse"))
    _assert_clean(render_text(d))
    _assert_clean(json.dumps(render_slack(d), ensure_ascii=False))
    _assert_clean(d.to_json()["reply"])
    _assert_clean(d.summary)
    _assert_clean(json.dumps(d.suggestions, ensure_ascii=False))


@pytest.mark.parametrize("args", [["--json"], ["--format", "md"], ["--format", "slack"], ["--format", "text"]])
def test_secrets_redacted_in_kvdoctor_explain(args, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    proc = subprocess.run([sys.executable, "-m", "estimator.cli", "explain", "-", "--offline", *args], cwd=ROOT,
                          env=env, input=_secret_paste().encode(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    out = proc.stdout.decode()
    if args == ["--json"]:
        reply = json.loads(out)["reply"]
        assert "[redacted]" in reply
        _assert_clean(reply)
    else:
        _assert_clean(out)


def test_secrets_redacted_in_the_json_diagnosis(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    proc = subprocess.run([sys.executable, "-m", "estimator.cli", "explain", "-", "--offline", "--json"], cwd=ROOT,
                          env=env, input=_secret_paste().encode(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    _assert_clean(json.dumps(json.loads(proc.stdout)["diagnosis"], ensure_ascii=False))


@pytest.mark.parametrize("secret", [
    HF, XOXB, SK, "xoxp-" + "1234567890-abcdefghijkl", "xapp-" + "1-A0123456789-abcdefghij",
    "ghp_" + "A" * 36, "AKIA" + "ABCDEFGHIJKLMNOP",
])
def test_redact_known_token_shapes(secret):
    out = redact(f"token: {secret} end")
    assert secret not in out and "[redacted]" in out and out.startswith("token: ") and out.endswith(" end")


def test_redact_bearer_and_plain_text():
    assert BEARER not in redact(f"Authorization: Bearer {BEARER}")
    plain = "max_model_len 1010000 on an RTX A6000: sk-learn is a library; hf_hub is a module."
    assert redact(plain) == plain  # short look-alikes are not secrets


def test_a_pool_larger_than_the_assumed_budget_shows_no_negative_memory():
    """A 30 GiB KV pool on a card taken as a 24 GB RTX 4090 (budget 21.28 GiB) leaves "everything
    but KV" at −8.72 GiB: no memory is negative, the card or the utilization is not what was
    assumed — the row says so instead of printing the negative figure."""
    from estimator.diagnosis import diagnose
    from estimator.render import breakdown_rows

    text = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9 --max-model-len 8192\n"
            "(EngineCore_DP0 pid=1) INFO 05-01 10:00:00 [gpu_worker.py:440] Available KV cache memory: 30.00 GiB\n")
    d = diagnose(text, gpu="RTX 4090", vllm_version="0.20.0", offline=True, explain=True)
    row = next(r for r in breakdown_rows(d) if r[0] == "Everything but KV")
    assert row[1] == "—" and "8.72 GiB larger than the assumed budget" in row[3]


def test_the_estimate_table_says_when_graphs_sit_outside_the_budget():
    # Llama runs on Model Runner V2 by default from 0.23, which captures its graphs after the KV cache
    # is sized until 0.29: the table's zero says so rather than looking like "no graphs"
    from estimator.api import load_model, run_estimate
    from estimator.render import estimate_text
    from estimator.vllm import EngineSettings

    spec = load_model("meta-llama/Llama-3.1-8B", offline=True).spec
    def text(version):
        return estimate_text(run_estimate(spec, "RTX 4090", EngineSettings(vllm_version=version, max_model_len=8192)))
    assert "CUDA graphs (captured after KV)" in text("0.27.0")
    assert "captured after KV" not in text("0.29.0") and "captured after KV" not in text("0.21.0")


def test_the_non_torch_row_names_the_cards_own_libraries():
    """Outside torch's allocator sit the vendor's libraries: cuBLAS/NCCL on NVIDIA, oneDNN/oneCCL on an
    Intel card (the XPU worker shares the CUDA worker's accounting), hipBLAS/RCCL on AMD."""
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768\nGPU: {}\n"
            "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
            "stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
    labels = {}
    for card in ("Intel Arc Pro B70", "RTX 4090", "MI300X"):
        rows = breakdown_rows(diagnose(text.format(card), offline=True))
        labels[card] = next(r[0] for r in rows if r[0].startswith("Non-torch"))
    assert labels == {"Intel Arc Pro B70": "Non-torch (oneDNN, oneCCL…)", "RTX 4090": "Non-torch (cuBLAS, NCCL…)",
                      "MI300X": "Non-torch (hipBLAS, RCCL…)"}


def test_the_estimate_table_quotes_a_largest_length_only_when_the_asked_one_does_not_fit():
    """vLLM's binary search for the largest length is bounded by the length asked for, so for a length
    that fits it only repeats it ("largest that fits: 16,384" beside a 446,656-token pool reads as a
    limit); the table then says what the length needs of the pool. Qwen2-7B at 16,384 tokens: 28
    layers × 4 KV heads × 128 × 2 × 2 B = 57,344 B per token × 16,384 = 0.88 GiB."""
    from estimator.api import load_model, run_estimate
    from estimator.render import estimate_text
    from estimator.vllm import EngineSettings

    spec = load_model("Qwen/Qwen2-7B-Instruct", offline=True).spec
    est = run_estimate(spec, "A100 80GB", EngineSettings(vllm_version="0.10.1", max_model_len=16_384,
                                                         gpu_memory_utilization=0.5))
    text = estimate_text(est)
    assert f"{57_344 * 16_384 / 2**30:.2f}" == "0.88"
    assert f"fits (needs 0.88 GiB of the {est.kv_cache_bytes / 2**30:.2f} GiB KV cache)" in text
    assert "largest that fits" not in text
    short = estimate_text(run_estimate(spec, "A100 80GB", EngineSettings(vllm_version="0.10.1", max_model_len=32_768,
                                                                         gpu_memory_utilization=0.2)))
    assert "DOES NOT FIT (largest that fits: " in short


def test_a_range_whose_ends_round_alike_is_one_figure():
    """V0's "(7344)" is 459 blocks of Qwen1.5-7B (32 layers × 32 KV heads × 128 × 2 × 2 B × 16 = 8 MiB): the
    pool lies between 459 and 460 blocks' worth of what vLLM had, 3.586–3.594 GiB, both 3.59 to two decimals,
    so the row shows 3.59 and not "3.59–3.59". A pool known only as "more than 5,000 tokens' worth" would
    still show both ends where they differ."""
    from estimator.derive import Figure
    from estimator.units import GiB

    text = ("python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen1.5-7B-Chat\n"
            "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
            "stored in KV cache (7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
    d = diagnose(text, offline=True)
    row = next(r for r in breakdown_rows(d) if r[0] == "KV cache pool")
    assert row[1] == "3.59" and "459 blocks × 8.00 MiB" in row[3]
    d.state.figures["kv_pool"] = Figure("kv_pool", int(3.6 * GiB), "derived", "test", low=int(3.5 * GiB),
                                        high=int(3.7 * GiB))
    assert next(r for r in breakdown_rows(d) if r[0] == "KV cache pool")[1] == "3.50–3.70"
