"""What a package index serves: the sdist and the wheel built from it, installed into fresh
venvs (base, ``[server]``, ``[client]``, ``[mcp]``, ``[postgres]``) outside the source tree. Every
tracked file ships, every module imports wherever its extra is installed, a server from the wheel
takes a lease, and the base install verifies its receipt and audits its ledger — or, for what it
cannot do, names the extra to install."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, lease, rid
from tests.test_serve_options import Log

pytestmark = pytest.mark.wheel
EXTRAS = ["", "server", "client", "mcp", "postgres"]
PACKAGES = ("api", "verify", "ledger")
IMPORT_ALL = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError as error:
        failed[name] = [type(error).__name__, error.name or "", str(error)]
print(json.dumps(failed))
"""


def tracked(*paths: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True)
    return listed.stdout.split()


def modules() -> list[str]:
    """Every module of the source tree, as its dotted name (``__main__`` runs a command: left
    out)."""
    names = []
    for path in tracked(*PACKAGES):
        if path.endswith(".py") and not path.endswith("__main__.py"):
            dotted = path[: -len(".py")].replace("/", ".")
            names.append(dotted.removesuffix(".__init__"))
    return names


def run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A command away from the source tree, so only what was installed can be imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (as ``python -m build`` does)."""
    out = tmp_path_factory.mktemp("dist")
    done = run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], out, 600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {"sdist": next(out.glob("*.tar.gz")), "wheel": next(out.glob("*.whl"))}


@pytest.fixture(scope="module")
def venvs(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv per extra from the wheel, and a base one from the sdist: each its python."""
    root = tmp_path_factory.mktemp("venvs")
    wanted = {e or "base": f"{dist['wheel']}[{e}]" if e else str(dist["wheel"]) for e in EXTRAS}
    wanted["sdist"] = str(dist["sdist"])
    with ThreadPoolExecutor(3) as pool:  # pip mostly waits: overlap the installs
        pythons = pool.map(lambda requirement: install(root, requirement), wanted.values())
        return dict(zip(wanted, pythons, strict=True))


def install(root: Path, requirement: str) -> Path:
    """A venv without pip of its own (this one's pip installs into it: faster)."""
    venv = root / re.sub(r"\W", "-", requirement.rpartition("/")[2])
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    done = run([*pip, "--no-compile", requirement], root, 600)  # no .pyc: faster
    assert done.returncode == 0, done.stderr[-3000:]
    return python


def test_every_tracked_file_of_the_packages_and_the_licenses_ship(dist: dict[str, Path]) -> None:
    shipped = set(zipfile.ZipFile(dist["wheel"]).namelist())
    missing = set(tracked(*PACKAGES)) - shipped
    assert not missing
    licenses = {name.partition(".dist-info/licenses/")[2] for name in shipped}
    assert {"LICENSE", "verify/contexts/LICENSE-w3c.md"} <= licenses


def imports(python: Path, cwd: Path) -> dict[str, list[str]]:
    done = run([str(python), "-I", "-c", IMPORT_ALL, *modules()], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    failed: dict[str, list[str]] = json.loads(done.stdout)
    return failed


@pytest.mark.parametrize("venv", ["base", "server", "client", "mcp", "postgres", "sdist"])
def test_every_module_imports_or_lacks_only_another_projects_module(
    venvs: dict[str, Path], venv: str, tmp_path: Path
) -> None:
    failed = imports(venvs[venv], tmp_path)
    ours = {name: why for name, why in failed.items() if why[1].partition(".")[0] in PACKAGES}
    assert not ours, ours  # a module of ours missing from the install is a packaging bug
    promised = {
        "base": ("verify",),
        "sdist": ("verify",),
        "server": ("api", "ledger"),
        "client": ("api.client",),
        "mcp": ("api.mcp_server", "api.mcp_cli"),
        "postgres": ("ledger.postgres",),
    }[venv]
    elsewhere = ("api.mcp_server", "ledger.postgres") if venv == "server" else ()  # own extras
    broken = [n for n in failed if n.startswith(promised) and not n.startswith(elsewhere)]
    assert broken == [], {name: failed[name] for name in broken}


@pytest.fixture(scope="module")
def served(venvs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A two-worker server from the [server] wheel: its folder, once it has printed its URL."""
    where = tmp_path_factory.mktemp("served")
    tenure = venvs["server"].parent / "tenure"
    cmd = [str(tenure), "serve", "--port", "0", "--workers", "2"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    process = subprocess.Popen(cmd, cwd=where, env=env, stderr=subprocess.PIPE, text=True)
    try:
        (where / "url").write_text(Log(process).url())
    except BaseException:
        process.kill()
        raise
    yield where
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def test_the_wheel_serves_a_lease_the_base_install_verifies_and_audits(
    venvs: dict[str, Path], served: Path
) -> None:
    with httpx.Client(base_url=(served / "url").read_text(), timeout=10) as client:
        answer = lease(client, "acquire", resource=rid(), holder="wheel", ttlSeconds=30)
        assert answer.status_code == 201
        (served / "receipt.json").write_text(answer.text)
        keys = client.get("/api/v1/keys")
        (served / "keys.json").write_text(keys.text)
    base = venvs["base"].parent
    checked = run([str(base / "verify-provenance"), "receipt.json", "--keys", "keys.json"], served)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    server = venvs["server"].parent
    out = ["--out", "ledger.jsonl", "--quiet"]
    exported = run([str(server / "tenure"), "export", *out], served)
    assert exported.returncode == 0, exported.stderr
    trust = [arg for key in keys.json()["keys"] for arg in ("--trust", key["did"])]
    audited = run([str(base / "tenure"), "audit", "ledger.jsonl", *trust, "--quiet"], served)
    assert audited.returncode == 0, audited.stdout + audited.stderr


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["serve"], "server"),
        (["apikey", "create", "team-a"], "server"),
        (["export", "--out", "x.jsonl"], "server"),
        (["lease", "run", "r", "--", "true"], "client"),
    ],
)
def test_the_base_install_names_the_extra_a_command_needs(
    venvs: dict[str, Path], tmp_path: Path, command: list[str], extra: str
) -> None:
    done = run([str(venvs["base"].parent / "tenure"), *command], tmp_path, 60)
    assert done.returncode == 2, done.stderr
    assert f"pip install 'tenure[{extra}]'" in done.stderr and "Traceback" not in done.stderr
    assert sorted(tmp_path.iterdir()) == []


def test_the_server_install_names_the_postgres_extra_for_a_database(
    venvs: dict[str, Path], tmp_path: Path
) -> None:
    database = ["--database", "postgresql://tenure@127.0.0.1:1/tenure"]
    done = run([str(venvs["server"].parent / "tenure"), "serve", *database], tmp_path, 60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'tenure[postgres]'" in done.stderr and "Traceback" not in done.stderr
    assert sorted(tmp_path.iterdir()) == []
