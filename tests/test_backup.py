"""`tenure backup` of a running server's SQLite ledger and `tenure restore` of the copy: real
servers, real files. A copy under load holds every entry acknowledged before it started and
audits; kill -9 mid-copy leaves no DEST and the server's ledger whole; a restored ledger keeps
fencing tokens increasing; copies that do not audit and occupied folders are refused."""

from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from ledger.keys.keyring import signing_keys
from tests.conftest import ROOT, Server, lease, ledger_size, rid
from verify.rfc9162 import leaf_hash

NOW_MS = 1_767_225_600_000  # 2026-01-01, a fixed clock
LOST = ("--log-size", "1000000")
"""A restore's size of the lost log (tests/test_fencing_floor.py tests the fencing floor)."""
Acked = tuple[int, str]
"""An acknowledged entry: its log index and leaf hash (base64), from the answer."""


def tenure(*args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *map(str, args)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def backup(server: Server, dest: Path) -> subprocess.CompletedProcess[str]:
    return tenure("backup", dest, "--data", server.data, "--keys", server.root / "keys")


def acquire(client: httpx.Client, resource: str) -> dict[str, object]:
    answer = lease(client, "acquire", resource=resource, holder="h", ttlSeconds=60)
    assert answer.is_success, answer.text
    return dict(answer.json()["data"])


class Load:
    """Threads acquiring fresh resources until stopped, each acknowledged entry kept."""

    def __init__(self, server: Server, threads: int = 6) -> None:
        self.acked: list[Acked] = []
        self.errors: list[BaseException] = []
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(server,)) for _ in range(threads)]
        for thread in self._threads:
            thread.start()

    def _run(self, server: Server) -> None:
        try:
            with server.client() as client:
                while not self._stop.is_set():
                    ledger = acquire(client, rid("load"))["ledger"]
                    assert isinstance(ledger, dict)
                    with self._lock:
                        self.acked.append((int(ledger["logIndex"]), str(ledger["leafHash"])))
        except BaseException as error:
            self.errors.append(error)
            raise

    def snapshot(self) -> list[Acked]:
        assert not self.errors, self.errors
        with self._lock:
            return list(self.acked)

    def wait_for(self, count: int) -> list[Acked]:
        """The acknowledged entries once there are ``count`` (at most 120 s)."""
        deadline = time.monotonic() + 120
        while len(acked := self.snapshot()) < count:
            assert time.monotonic() < deadline, f"only {len(acked)} acknowledged in 120 s"
            time.sleep(0.01)
        return acked

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)


def audited_leaves(folder: Path, keys: Path, trust: str, tmp: Path) -> dict[int, str]:
    """Export the copy, `tenure audit --trust` it (exit 0), and return its leaf hashes."""
    out = tmp / f"{folder.name}.jsonl"
    exported = tenure("export", "--data", folder, "--keys", keys, "--out", out, "--quiet")
    assert exported.returncode == 0, exported.stderr
    checked = tenure("audit", out, "--trust", trust, "--quiet")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return {
        r["index"]: base64.b64encode(leaf_hash(base64.b64decode(r["leaf"]))).decode()
        for r in records
        if r["type"] == "entry"
    }


def did_of(server: Server) -> str:
    return str(httpx.get(server.url + "/api/v1/keys", timeout=10).json()["keys"][-1]["did"])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Server:
    server = Server(tmp_path_factory.mktemp("backup"), ["--workers", "2"]).start()
    load = Load(server)
    try:
        load.wait_for(3000)
    finally:
        load.stop()
    yield server  # type: ignore[misc]
    server.stop()


def test_a_backup_under_load_holds_every_entry_acknowledged_before_it(
    loaded: Server, tmp_path: Path
) -> None:
    load = Load(loaded)
    before = load.wait_for(50)
    try:
        done = backup(loaded, tmp_path / "copy")
        during = len(load.snapshot()) - len(before)
    finally:
        load.stop()
    assert done.returncode == 0, done.stderr
    assert during > 0  # the server kept acknowledging while the copy was taken
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == [
        "keys.fingerprint",
        "tenure.db",
    ]
    leaves = audited_leaves(tmp_path / "copy", loaded.root / "keys", did_of(loaded), tmp_path)
    assert all(leaves.get(index) == leaf for index, leaf in before)
    assert not list(tmp_path.glob(".copy.partial-*"))


def test_kill_9_during_a_backup_leaves_no_dest_and_the_ledger_whole(
    loaded: Server, tmp_path: Path
) -> None:
    dest = tmp_path / "copy"
    cmd = [sys.executable, "-m", "api", "backup", str(dest), "--data", str(loaded.data)]
    cmd += ["--keys", str(loaded.root / "keys")]
    process = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE)
    while not list(tmp_path.glob(".copy.partial-*")):  # the copy has begun
        assert process.poll() is None, "the backup ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    assert process.wait(30) == -signal.SIGKILL
    assert not dest.exists()
    with loaded.client() as client:  # the server serves on, its ledger whole
        assert acquire(client, rid("after"))["outcome"] == "GRANTED"
    again = backup(loaded, dest)
    assert again.returncode == 0, again.stderr
    assert not list(tmp_path.glob(".copy.partial-*"))  # the dead copy's folder is gone
    leaves = audited_leaves(dest, loaded.root / "keys", did_of(loaded), tmp_path)
    assert len(leaves) >= 3000


def test_a_restored_ledger_keeps_fencing_tokens_increasing(
    fresh_server: Server, tmp_path: Path
) -> None:
    server, resource = fresh_server.start(), rid("fenced")
    with server.client() as client:
        for _ in range(2):
            taken = acquire(client, resource)
            lease(client, "release", resource=resource, ownerToken=taken["ownerToken"])
        size = ledger_size(client)
    copied = int(str(taken["fencingToken"]))
    assert copied == 2
    assert backup(server, tmp_path / "copy").returncode == 0
    server.stop()
    restored = Server(tmp_path / "restored")
    shutil.copytree(server.root / "keys", restored.root / "keys")
    keys = restored.root / "keys"
    done = tenure(
        "restore",
        tmp_path / "copy",
        "--data",
        restored.data,
        "--keys",
        keys,
        "--log-size",
        str(size),
    )
    assert done.returncode == 0, done.stderr
    restored.start()
    try:
        with restored.client() as client:
            assert acquire(client, resource)["fencingToken"] == copied + 1
    finally:
        restored.stop()


def test_restore_refuses_what_does_not_audit_and_occupied_folders(
    loaded: Server, tmp_path: Path
) -> None:
    copy, keys = tmp_path / "copy", loaded.root / "keys"
    assert backup(loaded, copy).returncode == 0
    refused = backup(loaded, copy)
    assert refused.returncode == 2 and f"DEST {copy} exists" in refused.stderr
    served = tenure("restore", copy, "--data", loaded.data, "--keys", keys, *LOST)
    assert served.returncode == 2 and "a running server serves" in served.stderr
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    full = tenure("restore", copy, "--data", occupied, "--keys", keys, *LOST)
    assert full.returncode == 2 and "is not empty" in full.stderr
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]
    other_keys = tmp_path / "other-keys"
    signing_keys(other_keys, NOW_MS)  # a keys folder that never signed this log
    foreign = tenure("restore", copy, "--data", tmp_path / "a", "--keys", other_keys, *LOST)
    assert foreign.returncode == 1 and "does not audit" in foreign.stderr
    assert not (tmp_path / "a").exists()


def test_a_tampered_copy_is_refused(loaded: Server, tmp_path: Path) -> None:
    copy, keys = tmp_path / "copy", loaded.root / "keys"
    assert backup(loaded, copy).returncode == 0
    database = copy / "tenure.db"
    first = next(iter(audited_leaves(copy, keys, did_of(loaded), tmp_path)))
    export = (tmp_path / "copy.jsonl").read_text().splitlines()
    leaf = next(
        base64.b64decode(json.loads(line)["leaf"])
        for line in export
        if json.loads(line).get("index") == first
    )
    data = database.read_bytes()
    assert data.count(leaf) == 1
    at = data.index(leaf) + len(leaf) // 2
    database.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    done = tenure("restore", copy, "--data", tmp_path / "restored", "--keys", keys, *LOST)
    assert done.returncode == 1 and "does not audit" in done.stderr
    assert not (tmp_path / "restored").exists()
    assert not list(tmp_path.glob(".restored.partial-*"))
