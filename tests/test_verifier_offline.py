"""The offline verifier (DESIGN §6, §7) opens no socket and imports nothing of the server."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import ROOT, Server, lease, rid
from verify.cli import main

SERVER_MODULES = ("fastapi", "uvicorn", "starlette", "sqlite3", "_sqlite3", "api", "ledger")


def _no_network(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("the offline verifier tried to open a socket")


@pytest.fixture(scope="module")
def saved(server: Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A jcs bundle, an rdfc bundle, a saved response and the keyring, written to files."""
    folder = tmp_path_factory.mktemp("saved")
    with server.client() as api:
        granted = lease(api, "acquire", resource=rid(), holder="w").json()
        index = granted["data"]["ledger"]["logIndex"]
        documents = {
            "bundle": api.get(f"/api/v1/log/bundle/{index}").json(),
            "rdfc": api.get(
                f"/api/v1/log/bundle/{index}", headers={"Accept-Provenance": "eddsa-rdfc-2022"}
            ).json(),
            "response": granted,
            "keyring": api.get("/api/v1/keys").json(),
        }
    paths = {}
    for name, document in documents.items():
        paths[name] = str(folder / f"{name}.json")
        Path(paths[name]).write_text(json.dumps(document))
    return paths


def test_verifies_saved_files_with_sockets_forbidden(
    saved: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(socket, "socket", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    monkeypatch.setattr(socket, "getaddrinfo", _no_network)
    files = [saved["bundle"], saved["rdfc"], saved["response"]]
    assert main([*files, "--keys", saved["keyring"]]) == 0, capsys.readouterr().out
    assert main([saved["bundle"], saved["rdfc"]]) == 1  # no trusted key, no pass


def test_verifier_imports_nothing_of_the_server() -> None:
    modules = ["verify.cli", "verify.bundle", "verify.receipt"]
    if importlib.util.find_spec("verify.audit") is not None:
        modules.append("verify.audit")
    code = (
        f"import sys\nfor m in {modules!r}: __import__(m)\n"
        f"loaded = [m for m in {SERVER_MODULES!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_verifier_runs_where_the_server_packages_are_missing(saved: dict[str, str]) -> None:
    """As if FastAPI, uvicorn and sqlite3 were not installed: importing any of them fails."""
    code = (
        f"import sys\nfor m in {SERVER_MODULES!r}: sys.modules[m] = None\n"
        "from verify.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    files = [saved["bundle"], saved["rdfc"], saved["response"], "--keys", saved["keyring"]]
    done = subprocess.run(
        [sys.executable, "-c", code, *files], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
