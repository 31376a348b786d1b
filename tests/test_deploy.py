"""deploy/: the manifests parse and agree with each other, the code and the README.

`kubectl --dry-run` and `docker build` are not available offline, so this reads the files:
YAML structure and the fields each kind needs, selectors that select, ports that exist,
probes on the server's real endpoints, env names the code actually reads, the Dockerfile's
install command equal to the README's.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"

ENV_PREFIXES = ("KVDOCTOR_", "SLACK_", "DISCOURSE_", "HF_", "HUGGING_FACE_", "TRANSFORMERS_")
# Read by libraries or the image rather than by our code.
ENV_ALLOWED_EXTRA = {"HF_HOME", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PATH"}


def env_names_in_code(*paths: Path) -> set[str]:
    """Environment variable names our code reads: upper-case string literals with our prefixes."""
    prefixes = "|".join(ENV_PREFIXES)
    pattern = re.compile(r"""["']((?:""" + prefixes + r""")[A-Z0-9_]+)["']""")
    names: set[str] = set()
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for f in files:
            names |= set(pattern.findall(f.read_text()))
    return names


KNOWN_ENV = env_names_in_code(ROOT / "bot", ROOT / "estimator") | ENV_ALLOWED_EXTRA


def k8s_docs() -> dict[str, list[dict]]:
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d is not None] for p in sorted(K8S.glob("*.yaml"))}


def all_k8s() -> list[dict]:
    return [d for docs in k8s_docs().values() for d in docs if "kind" in d and d["kind"] != "Kustomization"]


def by_kind(kind: str) -> list[dict]:
    return [d for d in all_k8s() if d["kind"] == kind]


def server_deployment() -> dict:
    deps = [d for d in by_kind("Deployment") if "serve" in _argv(d)]
    assert len(deps) == 1, "exactly one Deployment runs `kvdoctor serve`"
    return deps[0]


def poller_workload() -> dict:
    found = [d for d in by_kind("Deployment") + by_kind("CronJob") if "discourse" in _argv(d)]
    assert len(found) == 1, "exactly one workload runs `kvdoctor discourse poll`"
    return found[0]


def _pod_spec(doc: dict) -> dict:
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return doc["spec"]["template"]["spec"]


def _pod_labels(doc: dict) -> dict:
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    return doc["spec"]["template"]["metadata"]["labels"]


def _argv(doc: dict) -> list[str]:
    c = _pod_spec(doc)["containers"][0]
    return list(c.get("command") or []) + list(c.get("args") or [])


def _selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


# -- Kubernetes ------------------------------------------------------------------------------------
def test_every_manifest_parses_and_names_itself():
    docs = k8s_docs()
    assert {"deployment.yaml", "service.yaml", "ingress.yaml", "secret.example.yaml", "poller.yaml"} <= set(docs)
    for name, items in docs.items():
        assert items, f"{name} is empty"
        for d in items:
            assert isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str), name
            if d["kind"] != "Kustomization":
                assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", d["metadata"]["name"]), name


def test_server_deployment_replicas_probes_and_security():
    dep = server_deployment()
    assert dep["apiVersion"] == "apps/v1"
    assert dep["spec"]["replicas"] >= 2
    assert _selects(dep["spec"]["selector"]["matchLabels"], _pod_labels(dep))
    pod = _pod_spec(dep)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    (c,) = pod["containers"]
    assert c["image"]
    argv = _argv(dep)
    port = int(argv[argv.index("--port") + 1])
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert port in ports.values()
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = c[probe]["httpGet"]
        assert get["path"] == path, probe
        assert get["port"] == port or ports.get(get["port"]) == port, probe
    # /readyz waits up to 5 s for the database (bot/server.py READY_TIMEOUT_S): the probe must wait longer.
    from bot.server import READY_TIMEOUT_S

    assert c["readinessProbe"]["timeoutSeconds"] > READY_TIMEOUT_S
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    hf_home = {e["name"]: e.get("value") for e in c.get("env", [])}.get("HF_HOME")
    assert hf_home in mounts  # the Hugging Face cache is on a volume


def test_service_and_ingress_route_to_the_server():
    dep = server_deployment()
    (svc,) = by_kind("Service")
    assert _selects(svc["spec"]["selector"], _pod_labels(dep))
    assert not _selects(svc["spec"]["selector"], _pod_labels(poller_workload()))  # the poller serves nothing
    container_ports = {p["name"]: p["containerPort"] for p in _pod_spec(dep)["containers"][0]["ports"]}
    svc_ports = {}
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in container_ports or p["targetPort"] in container_ports.values()
        svc_ports[p["name"]] = p["port"]
    (ing,) = by_kind("Ingress")
    assert ing["apiVersion"] == "networking.k8s.io/v1"
    paths = []
    for rule in ing["spec"]["rules"]:
        for p in rule["http"]["paths"]:
            backend = p["backend"]["service"]
            assert backend["name"] == svc["metadata"]["name"]
            port = backend["port"]
            assert port.get("name") in svc_ports or port.get("number") in svc_ports.values()
            assert p["pathType"] in ("Exact", "Prefix")
            paths.append((p["path"], p["pathType"]))
    public = {"/", "/explain", "/api/explain", "/api/estimate", "/slack/events", "/discourse/webhook"}
    internal = {"/metrics", "/healthz", "/readyz"}

    def routed(url: str) -> bool:
        return any(url == path if kind == "Exact" else (url + "/").startswith(path.rstrip("/") + "/")
                   for path, kind in paths)

    assert all(routed(u) for u in public), paths
    assert not any(routed(u) for u in internal), paths


def test_secret_template_feeds_the_workloads():
    (secret,) = by_kind("Secret")
    keys = set(secret.get("stringData") or {}) | set(secret.get("data") or {})
    assert "KVDOCTOR_DATABASE_URL" in keys
    assert keys <= KNOWN_ENV, keys - KNOWN_ENV
    for workload in (server_deployment(), poller_workload()):
        refs = [e["secretRef"]["name"] for e in _pod_spec(workload)["containers"][0].get("envFrom", [])]
        assert secret["metadata"]["name"] in refs


def test_poller_runs_once_at_a_time():
    poller = poller_workload()
    assert _argv(poller)[-2:] == ["discourse", "poll"] or _argv(poller)[-3:-1] == ["discourse", "poll"]
    if poller["kind"] == "Deployment":
        assert poller["spec"]["replicas"] == 1
        assert poller["spec"]["strategy"]["type"] == "Recreate"  # no second poller during a rollout
        assert _selects(poller["spec"]["selector"]["matchLabels"], _pod_labels(poller))
    else:
        assert poller["spec"]["concurrencyPolicy"] == "Forbid"
    assert _pod_spec(poller)["securityContext"]["runAsNonRoot"] is True


def test_env_names_in_manifests_are_read_by_the_code():
    for d in all_k8s():
        if d["kind"] in ("Deployment", "CronJob"):
            names = {e["name"] for c in _pod_spec(d)["containers"] for e in c.get("env", [])}
            assert names <= KNOWN_ENV, (d["metadata"]["name"], names - KNOWN_ENV)


def test_kustomization_lists_real_files_and_not_the_secret_template():
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    for res in kust["resources"]:
        assert (K8S / res).is_file(), res
    assert "secret.example.yaml" not in kust["resources"]
    pdbs = by_kind("PodDisruptionBudget")
    for pdb in pdbs:
        assert _selects(pdb["spec"]["selector"]["matchLabels"], _pod_labels(server_deployment()))


# -- Compose -------------------------------------------------------------------------------------
def test_compose_starts_kvdoctor_after_a_healthy_postgres():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    pg, app = services["postgres"], services["kvdoctor"]
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    assert app["depends_on"]["postgres"]["condition"] == "service_healthy"
    url = app["environment"]["KVDOCTOR_DATABASE_URL"]
    m = re.fullmatch(r"postgresql\+psycopg://(\w+):[^@]+@postgres:5432/(\w+)", url)
    assert m and m.group(1) == pg["environment"]["POSTGRES_USER"] and m.group(2) == pg["environment"]["POSTGRES_DB"]
    assert (DEPLOY / app["build"]["context"] / app["build"]["dockerfile"]).resolve() == (DEPLOY / "Dockerfile").resolve()
    assert app["command"][:2] == ["kvdoctor", "serve"]
    assert "/readyz" in " ".join(app["healthcheck"]["test"])
    assert any(v.endswith(":/data/hf") for v in app["volumes"])
    poller = services["discourse-poller"]
    assert poller["command"] == ["kvdoctor", "discourse", "poll"]
    assert poller["depends_on"]["postgres"]["condition"] == "service_healthy"
    for svc in (app, poller):
        assert set(svc["environment"]) <= KNOWN_ENV


# -- Dockerfile ----------------------------------------------------------------------------------
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _commands(block: str) -> list[str]:
    """Shell commands of a README block: one per line, `&&`/`;`-chains split, prompts and comments dropped."""
    out = []
    for line in block.splitlines():
        line = line.split(" #", 1)[0].strip().removeprefix("$ ")
        out += [c.strip() for c in re.split(r"&&|;|\|\|", line) if c.strip()]
    return out


def _normalise_pip(cmd: str) -> list[str] | None:
    """`[python -m] [/path/]pip install [options] SPEC...` → the SPECs, quotes removed; else None."""
    words = shlex.split(cmd)
    if words[:2] in (["python", "-m"], ["python3", "-m"]) or (words and words[0].endswith("/python") and words[1:2] == ["-m"]):
        words = words[2:]
    if len(words) < 2 or words[0].rsplit("/", 1)[-1] != "pip" or words[1] != "install":
        return None
    specs, skip = [], False
    for w in words[2:]:
        if skip:
            skip = False
        elif w in ("-r", "-c", "--prefix", "--target", "--root", "-t"):
            skip = True
        elif not w.startswith("-"):
            specs.append(w)
    return specs


def test_dockerfile_is_slim_non_root_with_hf_home_on_a_volume():
    ins = dockerfile_instructions()
    froms = [rest for word, rest in ins if word == "FROM"]
    assert len(froms) >= 2 and all("-slim" in f for f in froms)  # multi-stage, slim bases
    final = ins[max(i for i, (w, _) in enumerate(ins) if w == "FROM"):]
    user = [rest for w, rest in final if w == "USER"][-1]
    assert user.split(":")[0] not in ("root", "0")
    env = " ".join(rest for w, rest in final if w == "ENV")
    hf_home = re.search(r"HF_HOME=(\S+)", env).group(1)
    volumes = " ".join(rest for w, rest in final if w == "VOLUME")
    assert hf_home in volumes
    cmd = yaml.safe_load([rest for w, rest in final if w == "CMD"][-1])  # JSON form
    assert cmd[:2] == ["kvdoctor", "serve"]
    expose = [rest for w, rest in final if w == "EXPOSE"][-1]
    assert cmd[cmd.index("--port") + 1] == expose
    for w, rest in ins:
        if w == "COPY" and not rest.startswith("--from"):
            for src in shlex.split(rest)[:-1]:
                assert (ROOT / src).exists() or src == "README.md", src
    # The catalog check in the build stage refers to the package data pyproject ships.
    assert "catalog" in (DEPLOY / "Dockerfile").read_text()
    assert "catalog/*" in (ROOT / "pyproject.toml").read_text()


def test_dockerfile_install_command_matches_the_readme():
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("README.md not written yet")
    blocks = re.findall(r"<!--\s*install\s*-->\s*\n```[a-z]*\n(.*?)```", readme.read_text(), re.S)
    assert blocks, "README.md needs its install commands in a fenced block right after a line `<!-- install -->`"
    readme_specs = [s for cmd in _commands("\n".join(blocks)) if (s := _normalise_pip(cmd))]
    assert readme_specs, "the README's install block has no `pip install` command"
    docker_specs = [s for w, rest in dockerfile_instructions() if w == "RUN" and (s := _normalise_pip(rest))]
    assert docker_specs, "the Dockerfile installs nothing with pip"
    for specs in docker_specs:
        assert specs in readme_specs, f"Dockerfile installs {specs}; the README says {readme_specs}"


def test_normalise_pip_compares_what_is_installed():
    assert _normalise_pip("pip install '.[bot]'") == [".[bot]"]
    assert _normalise_pip('python -m pip install ".[bot]"') == [".[bot]"]
    assert _normalise_pip("/opt/kvdoctor/bin/pip install --no-cache-dir '.[bot]'") == [".[bot]"]
    assert _normalise_pip("pip install .") == ["."]
    assert _normalise_pip("pip wheel .") is None
    assert _commands("$ python3 -m venv .venv && . .venv/bin/activate && pip install . # cli\npip install '.[bot]'") == [
        "python3 -m venv .venv", ". .venv/bin/activate", "pip install .", "pip install '.[bot]'"]


# -- docs and CI ---------------------------------------------------------------------------------
def test_every_setting_is_documented():
    documented = (ROOT / "docs" / "deploy.md").read_text()
    read = env_names_in_code(ROOT / "bot" / "settings.py", ROOT / "bot" / "store.py")
    missing = sorted(n for n in read if f"`{n}`" not in documented)
    assert not missing, f"docs/deploy.md does not document {missing}"


def test_ci_services_script_is_sourceable():
    script = ROOT / ".ci" / "services"
    assert os.access(script, os.X_OK)  # .ci/run sources it only when executable
    subprocess.run(["bash", "-n", str(script)], check=True)
    # Sourced into .ci/run's `set -e` shell: a top-level `exit` would end CI.
    assert not re.search(r"^\s*exit\b", script.read_text(), re.M)
