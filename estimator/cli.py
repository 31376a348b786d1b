"""The `kvdoctor` command (design.md §3). Exit 0 on success, 2 on bad input, never a traceback.

Own options are picked out by hand so that every other token can be a vLLM flag in vLLM's own
spelling (`-tp 2`, `--max-model-len=64k`): argparse would mistake `-tp`'s value for MODEL.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Sequence

from estimator.errors import BadInput, KvdoctorError
from estimator.flags import is_env_word
from estimator.paste_text import decode

USAGE = """usage:
  kvdoctor estimate MODEL [--gpu GPU] [--gpu-count N] [--vllm-version V] [--engine v0|v1] [vLLM flags] [--json]
  kvdoctor estimate -- vllm serve MODEL [flags...]
  kvdoctor explain [PATH|-] [--model MODEL] [--gpu GPU] [--vllm-version V] [--posted DATE] [--json] [--format md|slack|text]
  kvdoctor serve [--host H] [--port P]
  kvdoctor slack --socket-mode
  kvdoctor discourse poll [--once]
common: --offline  --revision REV  --hf-token TOKEN"""

_VALUE_OPTS = {"--gpu", "--gpu-count", "--model", "--format", "--revision", "--hf-token", "--host", "--port",
               "--vllm-version", "--engine", "--posted"}
_BOOL_OPTS = {"--json", "--offline", "--socket-mode", "--once", "--help", "-h"}


def _split(argv: list[str]) -> tuple[dict, list[str], list[str]]:
    """Split argv into our options, positionals and the rest (vLLM flags)."""
    opts: dict = {}
    pos: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            rest += ["--"] + argv[i + 1:]
            break
        name, _, inline = tok.partition("=")
        if name in _VALUE_OPTS:
            if inline:
                opts[name] = inline
            elif i + 1 < len(argv):
                opts[name] = argv[i + 1]
                i += 1
            else:
                raise BadInput(f"{name} needs a value")
        elif tok in _BOOL_OPTS:
            opts[tok] = True
        elif tok.startswith(("VLLM_", "PYTORCH_CUDA_ALLOC_CONF=")) and "=" in tok:
            # an environment variable vLLM (VLLM_PP_LAYER_PARTITION=16,32) or PyTorch's allocator reads
            rest.append(tok)
        elif tok.startswith("-"):
            rest.append(tok)
            # a vLLM flag's value travels with it
            if "=" not in tok and i + 1 < len(argv) and not argv[i + 1].startswith("--") and \
                    tok not in ("--enforce-eager", "--enable-chunked-prefill", "--enable-prefix-caching",
                                "--trust-remote-code", "--no-enable-prefix-caching", "--no-enable-chunked-prefill"):
                rest.append(argv[i + 1])
                i += 1
        else:
            pos.append(tok)
        i += 1
    return opts, pos, rest


def _command_line(tokens: list[str]) -> tuple[str, list[str]]:
    """`vllm serve MODEL flags` / `python -m vllm.entrypoints.openai.api_server --model M …` → (model, flags)."""
    toks = list(tokens)
    env: list[str] = []
    while toks and is_env_word(toks[0]):
        env.append(toks.pop(0))         # `VAR=value vllm serve …`: kept for the flags parser
    while toks and (toks[0] in ("python", "python3", "-m") or toks[0].endswith("vllm") or
                    toks[0].startswith("vllm.entrypoints")):
        toks.pop(0)
    if toks and toks[0] == "serve":
        toks.pop(0)
    model = None
    if toks and not toks[0].startswith("-"):
        model = toks.pop(0)
    flags: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ("--model",) and i + 1 < len(toks):
            model = toks[i + 1]
            i += 2
            continue
        if t.startswith("--model="):
            model = t.split("=", 1)[1]
        else:
            flags.append(t)
        i += 1
    if not model:
        raise BadInput("the command line names no model (expected `vllm serve MODEL …`)")
    return model, env + flags


def _offline(opts: dict) -> bool | None:
    return True if opts.get("--offline") else None


def cmd_estimate(argv: list[str]) -> int:
    from estimator.api import load_model, run_estimate
    from estimator.vllm import EngineSettings, parse_flags

    opts, pos, rest = _split(argv)
    rest_all = list(rest)
    if "--" in rest:
        k = rest.index("--")
        model, flags = _command_line(rest[k + 1:])
        rest = rest[:k] + flags
    else:
        if not pos:
            raise BadInput("kvdoctor estimate needs a MODEL (a Hugging Face repo id or a local directory)")
        model = pos[0]
        if len(pos) > 1:
            raise BadInput(f"unexpected argument {pos[1]!r}")
    engine = opts.get("--engine")
    if engine not in (None, "v0", "v1"):
        raise BadInput("--engine must be v0 or v1 (vLLM 0.8–0.10 still ran V0 with VLLM_USE_V1=0)")
    settings = parse_flags(rest, EngineSettings(vllm_version=opts.get("--vllm-version"), engine=engine))
    gpu_count = _int_opt(opts, "--gpu-count")
    loaded = load_model(model, offline=_offline(opts), revision=opts.get("--revision"),
                        token=opts.get("--hf-token") or os.environ.get("HF_TOKEN"))
    est = run_estimate(loaded.spec, opts.get("--gpu"), settings, gpu_count=gpu_count)
    if settings.unknown_flags:
        est.assumptions.append("ignored flags (no memory effect modelled): " + " ".join(settings.unknown_flags))
    from estimator.advice import four_bit_checkpoint, suggest

    fixes = suggest(est, gpu_count=gpu_count)
    est.suggestions = [s.to_json() for s in fixes]
    given = rest_all[rest_all.index("--") + 1:] if "--" in rest_all else []
    if given and (given[0] in ("vllm", "python", "python3") or "=" in given[0]):
        from estimator.advice import command_with

        for s in est.suggestions:     # the command as given, with each fix applied
            s["command"] = command_with(given, s["flags"])
    if opts.get("--json"):
        print(json.dumps(est.to_json(), indent=2))
    else:
        from estimator.render import estimate_text

        print(estimate_text(est, four_bit_checkpoint(est, fixes)))
    return 0


def cmd_explain(argv: list[str]) -> int:
    from estimator.diagnosis import diagnose, explain_json, render_markdown, render_slack, render_text

    opts, pos, _rest = _split(argv)
    path = pos[0] if pos else "-"
    text = _read_input(path)
    posted = opts.get("--posted")
    if posted is not None and not re.match(r"\d{4}-\d{2}(-\d{2})?$", str(posted)):
        raise BadInput(f"--posted takes the paste's date as YYYY-MM-DD or YYYY-MM, not {posted!r}")
    diag = diagnose(text, model=opts.get("--model"), gpu=opts.get("--gpu"),
                    vllm_version=opts.get("--vllm-version"), offline=_offline(opts), explain=True,
                    posted=posted)
    fmt = opts.get("--format", "md")
    if fmt not in ("md", "slack", "text"):
        raise BadInput(f"--format must be md, slack or text, not {fmt!r}")
    if opts.get("--json"):
        print(json.dumps(explain_json(diag), indent=2, default=str))
        return 0
    if fmt == "slack":
        print(json.dumps(render_slack(diag), indent=2))
    elif fmt == "text":
        print(render_text(diag))
    else:
        print(render_markdown(diag))
    return 0


def _read_input(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read(8 * 2**20 + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > 8 * 2**20:
        raise BadInput("the paste is larger than 8 MiB; paste the error and the lines before it")
    if not data.strip():
        raise BadInput("the paste is empty")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) and "\x00" not in (text := decode(data)):
        return text         # UTF-16 with its byte-order mark: its NUL high bytes are no sign of a binary file
    if _looks_binary(data):
        raise BadInput("this looks like a binary file, not a log: paste the text vLLM printed")
    return data.decode("utf-8", errors="replace")


def _looks_binary(data: bytes) -> bool:
    """Logs are text: a NUL byte, a compressed-file signature or many control bytes mean binary."""
    head = data[:65536]
    if b"\x00" in head or head[:2] == b"\x1f\x8b" or head[:4] in (b"PK\x03\x04", b"\x7fELF", b"\x89PNG"):
        return True
    control = sum(1 for b in head if b < 32 and b not in (9, 10, 13, 27))
    return control > len(head) * 0.02


def _int_opt(opts: dict, name: str) -> int | None:
    if name not in opts:
        return None
    try:
        return int(opts[name])
    except ValueError:
        raise BadInput(f"{name} must be an integer") from None


def cmd_serve(argv: list[str]) -> int:
    opts, _pos, _rest = _split(argv)
    from bot.server import serve

    serve(host=opts.get("--host"), port=_int_opt(opts, "--port"))
    return 0


def cmd_slack(argv: list[str]) -> int:
    opts, _pos, _rest = _split(argv)
    if not opts.get("--socket-mode"):
        raise BadInput("kvdoctor slack runs in Socket Mode only: add --socket-mode (HTTP mode is `kvdoctor serve`)")
    from bot.settings import Settings
    from bot.slack import run_socket_mode

    run_socket_mode(Settings.from_env())
    return 0


def cmd_discourse(argv: list[str]) -> int:
    opts, pos, _rest = _split(argv)
    if not pos or pos[0] != "poll":
        raise BadInput("usage: kvdoctor discourse poll [--once]")
    from bot.discourse import run_poller
    from bot.settings import Settings

    run_poller(Settings.from_env(), once=bool(opts.get("--once")))
    return 0


COMMANDS = {"estimate": cmd_estimate, "explain": cmd_explain, "serve": cmd_serve, "slack": cmd_slack,
            "discourse": cmd_discourse}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    cmd = COMMANDS.get(args[0])
    if cmd is None:
        print(f"kvdoctor: unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    own = args[1:args.index("--")] if "--" in args else args[1:]
    if "-h" in own or "--help" in own:   # `kvdoctor explain --help` asks for usage, not to read stdin
        print(USAGE)
        return 0
    try:
        return cmd(args[1:])
    except KvdoctorError as exc:
        print(f"kvdoctor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        # design.md §3: never a traceback. What reaches here is a kvdoctor bug, not the user's input:
        # say so in one line, exit 1 (not 2, which means bad input)
        print(f"kvdoctor: internal error ({type(exc).__name__}: {str(exc)[:200]}); this is a kvdoctor bug, "
              "please report it with the command you ran", file=sys.stderr)
        return 1


def split_command(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise BadInput(f"cannot parse the command line: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
