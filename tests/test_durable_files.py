"""Every file tenure writes appears whole or not at all, and a key file that cannot be read is
named with exit 2, never a traceback: a rotation on a full disk must not brick the restarts."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main
from api.settings import Settings
from ledger.files import WriteFailed, atomic_write, create_once
from ledger.keys.keyring import SIGNING_GLOB
from tests.conftest import ROOT, free_port, rid


def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC where a full disk reports it for buffered data: at fsync."""

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


@pytest.fixture
def ledger(tmp_path: Path) -> dict[str, Path]:
    """A data and a keys folder holding a young ledger of one entry."""
    data, keys = tmp_path / "data", tmp_path / "keys"
    with TestClient(create_app(Settings(data_dir=data, keys_dir=keys))) as client:
        body: dict[str, Any] = {"resource": rid(), "holder": "w"}
        assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
    return {"data": data, "keys": keys}


def test_a_failed_write_keeps_the_old_file_and_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    atomic_write(path, b"old")
    full_disk(monkeypatch)
    with pytest.raises(WriteFailed, match=f"cannot write {path}: No space left on device"):
        atomic_write(path, b"new")
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_create_once_never_replaces_what_another_process_created(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    assert create_once(path, b"first") is True
    assert create_once(path, b"second") is False
    assert path.read_bytes() == b"first" and (path.stat().st_mode & 0o777) == 0o600


def test_rotation_on_a_full_disk_leaves_no_key_and_restarts_work(
    ledger: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = ledger["keys"]
    before = sorted(keys.glob(SIGNING_GLOB))
    with monkeypatch.context() as patched:
        full_disk(patched)
        assert main(["keys", "rotate", "--keys", str(keys)]) == 1
    err = capsys.readouterr().err
    assert "not rotated: cannot write" in err and "No space left on device" in err
    assert sorted(keys.glob(SIGNING_GLOB)) == before and leftovers(keys) == []
    assert main(["keys", "show", "--keys", str(keys)]) == 0
    assert f"keys in folder: {len(before)}" in capsys.readouterr().out


def cut_key() -> bytes:
    """The first half of a PEM key generated here: a key file cut short by a full disk."""
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem[: len(pem) // 2]


@pytest.mark.parametrize("cut", [False, True], ids=["empty", "cut-short"])
def test_an_empty_or_cut_key_file_is_named_with_exit_2(
    ledger: dict[str, Path], cut: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = ledger["keys"]
    bad = keys / "signing-999999999999999-00000000.key"
    bad.write_bytes(cut_key() if cut else b"")
    assert main(["keys", "show", "--keys", str(keys)]) == 2
    err = capsys.readouterr().err
    assert f"signing key {bad} cannot be read" in err and "Traceback" not in err
    port = str(free_port())
    serve = [sys.executable, "-m", "api", "serve", "--port", port, "--workers", "1"]
    serve += ["--data", str(ledger["data"]), "--keys", str(keys)]
    done = subprocess.run(serve, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert str(bad) in done.stderr and "Traceback" not in done.stderr


def test_an_export_on_a_full_disk_leaves_no_file_and_exits_1(
    ledger: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ledger["data"].parent / "ledger.jsonl"
    args = ["export", "--data", str(ledger["data"]), "--keys", str(ledger["keys"])]
    with monkeypatch.context() as patched:
        full_disk(patched)
        assert main([*args, "--out", str(out), "--quiet"]) == 1
    assert f"cannot write {out}" in capsys.readouterr().err
    assert not out.exists() and leftovers(out.parent) == []
    assert main([*args, "--out", str(out), "--quiet"]) == 0 and out.stat().st_size > 0


WRITES = re.compile(r"\.write_(text|bytes)\(|\.open\(\s*\"[wx]|\bopen\([^)]*\"[wx]b?\"")


def test_no_module_writes_a_file_but_through_ledger_files() -> None:
    """A file written any other way could be left half-written under its final name."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("api", "ledger", "verify")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "files.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WRITES.search(line)
    ]
    assert found == []


def test_lease_run_receipts_that_cannot_be_saved_are_said_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from api.lease_run import _save

    folder = tmp_path / "receipts"
    full_disk(monkeypatch)
    _save(folder, [{"data": {"op": "acquire", "outcome": "GRANTED"}}])
    assert "receipts not saved: cannot write" in capsys.readouterr().err
    assert list(folder.iterdir()) == []
