"""bot/web.py over real HTTP on 127.0.0.1: the page, escaping, the JSON API, limits, the bar."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from bot.server import create_app
from bot.settings import Settings
from bot.store import Store
from bot.web import GIB, RateLimiter, budget_svg, estimate_args, memory_figures
from estimator.render import markdown_to_html

ROOT = Path(__file__).resolve().parent.parent
SEED = (ROOT / "examples" / "seed-post.txt").read_text()


@pytest.fixture
def make_base(live_server, tmp_path):
    def make(**env: str) -> str:
        settings = Settings.from_env({"KVDOCTOR_OFFLINE": "1", **env})
        return live_server(create_app(settings, Store(f"sqlite:///{tmp_path / 'web.sqlite'}")))

    return make


@pytest.fixture
def base(make_base) -> str:
    return make_base()


# -- the page ------------------------------------------------------------------------------------
def test_page_is_self_contained_with_a_nonce_csp(base):
    r = httpx.get(base + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([A-Za-z0-9_-]+)'", csp).group(1)
    assert "default-src 'none'" in csp and "form-action 'self'" in csp
    page = r.text
    assert re.search(r'<form method="post" action="/explain"', page)
    for name in ("text", "model", "gpu", "vllm_version"):
        assert f'name="{name}"' in page
    # No external assets: nothing loaded from another origin, no stylesheet/script files at all.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "src=" not in page
    assert page.count("<script") == 1 and f'<script nonce="{nonce}">' in page
    assert f'<style nonce="{nonce}">' in page
    assert httpx.get(base + "/").headers["content-security-policy"] != csp  # a new nonce per response


def test_form_post_explains_the_seed_paste(base):
    r = httpx.post(base + "/explain", data={"text": SEED, "model": "", "gpu": "", "vllm_version": ""})
    assert r.status_code == 200
    page = r.text
    assert "73,792" in page  # the capacity vLLM printed: KV cache (73792)
    commands = re.findall(r'<code id="fix-\d+">([^<]*)</code>', page)
    assert any("--max-model-len" in c for c in commands)
    assert '<svg class="budget"' in page
    assert 'data-segment="kv"' in page  # the KV part of the bar is drawn
    # The paste is kept in the form, escaped (the seed's apostrophes become &#x27;).
    assert "I&#x27;m trying to run the model Qwen/Qwen2.5-14B-Instruct-1M" in page


@pytest.mark.parametrize("text", [SEED, "no vllm problem here"])
def test_user_text_is_escaped_everywhere(base, text):
    payload = "<script>alert('x')</script>"
    r = httpx.post(base + "/explain", data={
        "text": text.replace("From my understanding:", f"From my understanding: {payload}") + payload,
        "model": '"><script>alert(2)</script>',
        "gpu": "<img src=x onerror=alert(3)>",
        "vllm_version": "</textarea><script>alert(4)</script>",
    })
    page = r.text
    assert page.count("<script") == 1  # only ours (with the nonce)
    assert "<img" not in page and "</textarea><script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert 'value="&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"' in page
    assert "&lt;img src=x onerror=alert(3)&gt;" in page


def test_form_errors_are_pages_not_tracebacks(base):
    r = httpx.post(base + "/explain", data={"text": ""})
    assert r.status_code == 400 and "&quot;text&quot; is required" in r.text and "<form" in r.text
    r = httpx.post(base + "/explain", data={"text": SEED, "gpu": "potato"})
    # An unknown GPU is the user's to fix: the page says so (400), keeps the paste.
    assert r.status_code in (200, 400) and "Traceback" not in r.text
    r = httpx.post(base + "/explain", content=b"text=x", headers={"content-type": "text/plain"})
    assert r.status_code == 415


# -- the JSON API --------------------------------------------------------------------------------
def test_api_explain_returns_the_design_json(base):
    r = httpx.post(base + "/api/explain", json={"text": SEED})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    data = r.json()
    assert set(data) == {"facts", "derived", "diagnosis", "estimate", "reply"}
    assert data["facts"]["error_max_tokens_in_kv"] == 73792
    assert data["facts"]["max_model_len"] == 1010000
    assert data["diagnosis"]["error_kind"] == "kv_capacity_v0"
    assert any("--max-model-len" in (s.get("flags") or "") for s in data["diagnosis"]["suggestions"])


ARCH_REFUSED = ("INFO 05-01 10:00:00 api_server.py:981] vLLM API server version 0.6.4.post1\n"
                "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now.\n")


def test_a_paste_vllm_refused_before_sizing_memory_is_answered_on_the_page(base):
    # not a memory problem, so the bots stay silent on it; a person who asked gets the answer
    page = httpx.post(base + "/explain", data={"text": ARCH_REFUSED, "model": "", "gpu": "", "vllm_version": ""}).text
    assert "No vLLM memory error found" not in page
    assert "Not a memory problem" in page and "upgrade to vLLM 0.8.4 or newer" in page
    data = httpx.post(base + "/api/explain", json={"text": ARCH_REFUSED}).json()
    assert data["diagnosis"]["error_kind"] is None and data["estimate"] is None
    assert data["diagnosis"]["summary"].startswith("**Not a memory problem**: vLLM 0.6.4.post1")


def test_api_explain_without_a_problem(base):
    r = httpx.post(base + "/api/explain", json={"text": "INFO: started server process"})
    assert r.status_code == 200
    assert r.json()["diagnosis"] is None and r.json()["message"].startswith("no vLLM")


@pytest.mark.parametrize("body, message", [
    (b"not json", "the body must be a JSON object"),
    (b"[1, 2]", "the body must be a JSON object"),
    (b"{}", '"text" is required'),
    (b'{"text": 5}', '"text" must be a string'),
    (b'{"text": "x", "model": "' + b"m" * 400 + b'"}', '"model" is too long'),
    (b"\xff\xfe", "the body must be a JSON object"),
])
def test_api_explain_bad_requests(base, body, message):
    r = httpx.post(base + "/api/explain", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"].startswith(message)


def test_api_estimate_returns_the_design_json(base):
    r = httpx.post(base + "/api/estimate", json={
        "model": "Qwen/Qwen2.5-14B-Instruct-1M", "gpu": "RTX A6000", "max_model_len": 32768,
    }, timeout=60)
    assert r.status_code == 200, r.text
    data = r.json()
    for key in ("model", "gpu", "settings", "memory", "kv_cache_tokens", "fits", "suggestions", "assumptions"):
        assert key in data
    # Qwen2.5-14B: 48 layers, 8 KV heads, head_dim 128, bf16 KV:
    # 2 (K and V) × 48 × 8 × 128 × 2 bytes = 196,608 bytes per token.
    assert data["model"]["kv_bytes_per_token"] == 196_608
    assert data["settings"]["max_model_len"] == 32768
    for key in ("budget_bytes", "weights_bytes", "activation_bytes", "non_torch_bytes", "cuda_graph_bytes",
                "kv_cache_bytes"):
        assert key in data["memory"]


@pytest.mark.parametrize("body, message", [
    ({"gpu": "A100"}, '"model" is required'),
    ({"model": "m", "max_len": 4}, "unknown field(s) max_len"),
    ({"model": "m", "settings": {"tp": 2}}, "unknown setting(s) tp"),
    ({"model": "m", "settings": []}, '"settings" must be an object'),
    ({"model": "m", "gpu_count": 0}, '"gpu_count" must be a whole number'),
    ({"model": "m", "max_model_len": 4, "settings": {"max_model_len": 8}}, '"max_model_len" is given twice'),
    ({"model": "Qwen/Qwen2.5-14B-Instruct-1M", "gpu": "potato"}, "unknown GPU 'potato'"),
    # found by fuzzing the settings: these raised AttributeError / OverflowError (a 500) before
    ({"model": "Qwen/Qwen2.5-14B-Instruct-1M", "settings": {"engine": True}}, "engine must be v0 or v1"),
    ({"model": "Qwen/Qwen2.5-14B-Instruct-1M", "settings": {"pipeline_parallel_size": 10**20}}, "at most 4,096"),
    ({"model": "Qwen/Qwen2.5-14B-Instruct-1M", "settings": {"max_model_len": int("9" * 400)}}, "(400 digits)"),
])
def test_api_estimate_bad_requests(base, body, message):
    r = httpx.post(base + "/api/estimate", json=body, timeout=60)
    assert r.status_code == 400
    assert message in r.json()["error"]


def test_estimate_args_accept_settings_at_top_level_or_nested():
    args = estimate_args({"model": "m", "gpu": "A100", "dtype": "half", "settings": {"max_model_len": 4096},
                          "gpu_count": 2})
    assert args == {"model": "m", "gpu": "A100", "gpu_count": 2,
                    "settings": {"dtype": "half", "max_model_len": 4096}}


# -- limits --------------------------------------------------------------------------------------
def test_rate_limit_is_per_client_ip(make_base):
    base = make_base(KVDOCTOR_RATE_LIMIT="3")
    a = {"X-Forwarded-For": "203.0.113.5"}  # uvicorn trusts X-Forwarded-For from 127.0.0.1
    b = {"X-Forwarded-For": "198.51.100.7"}
    codes = [httpx.post(base + "/api/explain", json={"text": "hi"}, headers=a).status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    r = httpx.post(base + "/api/explain", json={"text": "hi"}, headers=a)
    assert r.status_code == 429
    # 3 per minute = one token every 20 s; the bucket is empty, so the next one is ~20 s away.
    assert 19 <= int(r.headers["retry-after"]) <= 20
    assert httpx.post(base + "/explain", data={"text": "hi"}, headers=a).status_code == 429
    assert httpx.post(base + "/api/explain", json={"text": "hi"}, headers=b).status_code == 200
    assert httpx.get(base + "/", headers=a).status_code == 200  # reading the page is not limited


def test_rate_limiter_refills_at_its_rate():
    lim = RateLimiter(per_minute=2)  # capacity 2, one token every 30 s
    assert lim.allow("ip", now=0.0) == (True, 0.0)
    assert lim.allow("ip", now=0.0) == (True, 0.0)
    allowed, wait = lim.allow("ip", now=0.0)
    assert not allowed and wait == pytest.approx(30.0)
    allowed, wait = lim.allow("ip", now=15.0)  # half a token back: 15 s still to wait
    assert not allowed and wait == pytest.approx(15.0)
    assert lim.allow("ip", now=30.0)[0] is True
    assert RateLimiter(per_minute=0).allow("ip") == (True, 0.0)  # 0 = off
    small = RateLimiter(per_minute=1, max_clients=2)
    for ip in ("a", "b", "c"):
        small.allow(ip, now=0.0)
    assert small.allow("a", now=0.0)[0] is True  # "a" was evicted (least recent), so it starts full


def test_body_limit_on_the_page(make_base):
    base = make_base(KVDOCTOR_MAX_BODY_BYTES="4096")
    r = httpx.post(base + "/explain", data={"text": "z" * 10_000})
    assert r.status_code == 413


# -- rendering helpers ---------------------------------------------------------------------------
def test_markdown_subset_escapes_first():
    html = markdown_to_html("Use `--max-model-len <n>` **now** <b>x</b> [a](javascript:alert(1))\n\n"
                            "- one\n- two `<i>`\n\n| a | b |\n|---|---|\n| <1> | 2 |\n\n```\n<tag>\n```")
    assert "<code>--max-model-len &lt;n&gt;</code>" in html
    assert "<strong>now</strong>" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html
    assert "<a " not in html  # links stay text
    assert "<ul><li>one</li><li>two <code>&lt;i&gt;</code></li></ul>" in html
    assert "<th>a</th><th>b</th>" in html and "<td>&lt;1&gt;</td>" in html
    assert "<pre><code>&lt;tag&gt;</code></pre>" in html


def _rects(svg: str) -> dict[str, float]:
    return {m.group(2): float(m.group(1)) for m in
            re.finditer(r'<rect x="[\d.]+" y="0" width="([\d.]+)" height="\d+" class="[^"]+" data-segment="(\w+)"', svg)}


def test_bar_from_figures_vllm_printed():
    # A V1 startup log: total 47.54 GiB; weights 27.63, activation 1.41, non-torch 0.15, KV 13.60 GiB.
    facts = {"total_gpu_memory_gib": 47.54, "weights_gib": 27.63, "activation_peak_gib": 1.41,
             "non_torch_gib": 0.15, "kv_cache_gib": 13.60}
    total, segments = memory_figures({"facts": facts})
    assert total == (47.54 * GIB, "read from your paste")
    assert [s[0] for s in segments] == ["weights", "activation", "non_torch", "kv"]
    assert all(s[4] == "read from your paste" for s in segments)
    widths = _rects(budget_svg({"facts": facts}))
    # Widths are parts of 1000 px for 47.54 GiB:
    #   weights   27.63 / 47.54 × 1000 = 581.20
    #   KV        13.60 / 47.54 × 1000 = 286.08
    #   headroom  47.54 − (27.63 + 1.41 + 0.15 + 13.60) = 4.75 GiB → 4.75 / 47.54 × 1000 = 99.92
    assert widths["weights"] == pytest.approx(581.20, abs=0.01)
    assert widths["kv"] == pytest.approx(286.08, abs=0.01)
    assert widths["headroom"] == pytest.approx(99.92, abs=0.01)
    assert "graphs" not in widths  # not printed, not guessed
    assert "partial" in budget_svg({"facts": facts})


def test_bar_from_the_estimate_in_bytes():
    memory = {"budget_bytes": 72 * GIB, "weights_bytes": 16 * GIB, "activation_bytes": 2 * GIB,
              "non_torch_bytes": 1 * GIB, "cuda_graph_bytes": 1 * GIB, "kv_cache_bytes": 52 * GIB}
    result = {"facts": {}, "estimate": {"gpu": {"total_bytes": 80 * GIB}, "memory": memory}}
    widths = _rects(budget_svg(result))
    # 80 GiB = 1000 px: weights 16 → 200, activation 2 → 25, non-torch 1 → 12.5, graphs 1 → 12.5,
    # KV 52 → 650, headroom 80 − 72 = 8 → 100.
    assert widths == pytest.approx({"weights": 200.0, "activation": 25.0, "non_torch": 12.5, "graphs": 12.5,
                                    "kv": 650.0, "headroom": 100.0})
    assert "(estimated)" in budget_svg(result)


def test_bar_is_drawn_even_with_no_figures():
    svg = budget_svg({"facts": {"error_max_tokens_in_kv": 73792}, "estimate": None})
    assert '<svg class="budget"' in svg and "not known yet" in svg
