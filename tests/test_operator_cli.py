"""The operator's commands as an operator meets them: API keys listed and revoked on a live
server, folders without a ledger refused, progress bars only on a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.progress import Progress
from api.tenancy import KeyCache
from tests.conftest import ROOT, Server, rid


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def acquire(client: httpx.Client, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    body = {"resource": "job:" + rid(), "holder": "w"}
    return client.post("/api/v1/lease/acquire", json=body, headers=headers).status_code


def test_a_revoked_key_is_refused_within_a_second_without_restart(fresh_server: Server) -> None:
    server = fresh_server.start()
    data = str(server.data)
    key = tenure("apikey", "create", "team-a", "--data", data).stdout.strip()
    other = tenure("apikey", "create", "team-b", "--data", data).stdout.strip()
    listed = tenure("apikey", "list", "--data", data)
    assert listed.returncode == 0
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["team-a", "team-b"]
    assert key not in listed.stdout and other not in listed.stdout  # digests only
    with server.client() as client:
        assert acquire(client, key) == 201  # now cached by the server
        revoked = tenure("apikey", "revoke", "team-a", "--data", data)
        assert revoked.returncode == 0, revoked.stderr
        gone = time.monotonic()
        while acquire(client, key) != 401:
            assert time.monotonic() - gone < 1.5, "the revoked key still works"
            time.sleep(0.05)
        assert acquire(client, other) == 201
    assert [
        line.split("\t")[0] for line in tenure("apikey", "list", "--data", data).stdout.splitlines()
    ] == ["team-b"]
    again = tenure("apikey", "revoke", "team-a", "--data", data)
    assert again.returncode == 1 and "no API key named 'team-a'" in again.stderr


def test_the_key_cache_expires_on_its_clock() -> None:
    now = [0.0]
    tenants = {b"k": "acme"}
    cache = KeyCache(tenants.get, ttl=1.0, size=2, clock=lambda: now[0])
    assert cache.tenant(b"k") == "acme"
    del tenants[b"k"]
    now[0] = 0.999
    assert cache.tenant(b"k") == "acme"  # still within the TTL
    now[0] = 1.0
    assert cache.tenant(b"k") is None  # looked up again: revoked
    for digest in (b"a", b"b", b"c"):
        cache.tenant(digest)
    assert len(cache._found) == 2  # bounded


def test_commands_refuse_a_folder_without_a_ledger(tmp_path: Path) -> None:
    empty = tmp_path / "typo"
    for args in (
        ("apikey", "create", "x", "--data", str(empty)),
        ("apikey", "list", "--data", str(empty)),
        ("apikey", "revoke", "x", "--data", str(empty)),
        ("export", "--data", str(empty), "--out", str(tmp_path / "out.jsonl")),
    ):
        done = tenure(*args)
        assert done.returncode == 2, args
        assert f"no ledger in {empty}" in done.stderr
    for action in ("show", "rotate"):
        done = tenure("keys", action, "--keys", str(empty))
        assert done.returncode == 2 and f"no signing key in {empty}" in done.stderr
    assert not empty.exists()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_only_on_a_terminal_and_not_when_quiet() -> None:
    shown, piped, quiet = Terminal(), io.StringIO(), Terminal()
    for out, be_quiet in ((shown, False), (piped, False), (quiet, True)):
        bar = Progress("exporting", 200, be_quiet, out)
        bar.update(100)
        bar.close()
    assert "exporting [###############---------------]  50% 100/200" in shown.getvalue()
    assert shown.getvalue().endswith("\r\x1b[K")
    assert piped.getvalue() == "" and quiet.getvalue() == ""


def test_export_and_audit_end_with_a_summary(server: Server, tmp_path: Path) -> None:
    with server.client() as client:
        client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
        dids = [key["did"] for key in client.get("/api/v1/keys").json()["keys"]]
    out = tmp_path / "ledger.jsonl"
    keys = str(server.root / "keys")
    exported = tenure("export", "--data", str(server.data), "--keys", keys, "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr.startswith("exported ") and "[" not in exported.stderr  # no bar
    audited = tenure("audit", str(out), "--quiet", *(a for d in dids for a in ("--trust", d)))
    assert audited.returncode == 0, audited.stdout
    assert audited.stdout.strip().endswith(": OK") and audited.stderr == ""
