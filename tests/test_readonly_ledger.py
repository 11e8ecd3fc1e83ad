"""An auditor exports a read-only backup of a ledger: nothing in it is created, migrated or
chmod-ed, and nothing of it changes. Run as a user who cannot write the copy (as root, which
may write anything, the commands run as nobody)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from tests.conftest import ROOT, rid

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def as_reader(*args: str) -> subprocess.CompletedProcess[str]:
    """``tenure ARGS`` as a user without write access to the copy."""
    prefix = NOBODY if os.geteuid() == 0 else []
    cmd = [*prefix, sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path of the folder with its mode and size."""
    paths = [folder, *folder.rglob("*")]
    return {str(p): (p.stat().st_mode, p.stat().st_size) for p in paths}


@pytest.fixture
def backup() -> Iterator[Path]:
    """A read-only copy (folders 0555, files 0444) of a ledger of three entries."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user to be refused a write")
    if os.geteuid() == 0 and as_reader("--help").returncode != 0:
        pytest.skip(f"nobody cannot read the checkout {ROOT} (a 0700 folder above it)")
    root = Path(tempfile.mkdtemp(prefix="tenure-ro-"))
    root.chmod(0o755)
    settings = Settings(data_dir=root / "live", keys_dir=root / "keys")
    with TestClient(create_app(settings)) as client:
        for _ in range(3):
            body = {"resource": rid(), "holder": "w"}
            assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
    copy = root / "backup"
    shutil.copytree(root / "live", copy)
    for path in sorted(copy.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    copy.chmod(0o555)
    (root / "out").mkdir(mode=0o777)
    (root / "out").chmod(0o777)
    yield copy
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755)
    shutil.rmtree(root)


def test_a_read_only_backup_exports_and_lists_its_keys_unchanged(backup: Path) -> None:
    before = snapshot(backup)
    out = backup.parent / "out" / "ledger.jsonl"
    keys = str(backup.parent / "no-keys")
    done = as_reader("export", "--data", str(backup), "--keys", keys, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert sum('"type":"entry"' in line for line in out.read_text().splitlines()) == 3
    listed = as_reader("apikey", "list", "--data", str(backup))
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert snapshot(backup) == before
