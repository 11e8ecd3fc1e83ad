"""One ledger folder is one ledger, whatever shape opens it: a second `serve`, an admin CLI
beside a running server, after a key rotation, through a symlink, with another keys folder, by an
older or newer version — and no acknowledged entry is ever lost, kill -9 of either side included.
Each case ends by exporting the ledger and finding every acknowledged entry in it."""

from __future__ import annotations

import base64
import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, lease, rid

pytestmark = pytest.mark.slow


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def beside(first: Server, *args: str) -> Server:
    """A second `serve` of ``first``'s data and keys folders (its own port and log)."""
    second = Server(first.root / "second", args=list(args))
    second.root.mkdir(exist_ok=True)
    second.args += ["--keys", str(first.root / "keys")]
    return second


def start_on(server: Server, data: Path) -> Server:
    """Start ``server`` on the ledger folder ``data`` (its own --data is overridden)."""
    server.args += ["--data", str(data)]
    return server.start()


def acknowledged(answer: dict[str, Any]) -> tuple[int, str]:
    ledger = answer["data"]["ledger"]
    return int(ledger["logIndex"]), str(ledger["leafHash"])


def exported(root: Path, data: Path) -> dict[int, str]:
    """Every entry of the ledger in ``data``, by index: its leaf hash (base64), as exported."""
    out = root / f"export-{time.monotonic_ns()}.jsonl"
    done = tenure("export", "--data", str(data), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    leaves = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "entry":
            leaf = base64.b64decode(record["leaf"])
            digest = hashlib.sha256(b"\x00" + leaf).digest()
            leaves[record["index"]] = base64.b64encode(digest).decode()
    assert sorted(leaves) == list(range(len(leaves))), "the export has a gap"
    return leaves


def assert_all_kept(acks: list[tuple[int, str]], leaves: dict[int, str]) -> None:
    indexes = [index for index, _ in acks]
    assert len(set(indexes)) == len(indexes), "two acknowledged events share a log index"
    for index, leaf_hash in acks:
        assert leaves.get(index) == leaf_hash, f"acknowledged entry {index} is not in the ledger"


def rotate_and_wait(server: Server) -> None:
    with server.client() as client:
        old = _active(client)
        server.rotate_keys()
        deadline = time.monotonic() + 10
        while _active(client) == old:
            assert time.monotonic() < deadline, "the server never switched to the rotated key"
            time.sleep(0.05)


def _active(client: httpx.Client) -> str:
    keys = client.get("/api/v1/keys").json()["keys"]
    return str(next(key["did"] for key in keys if key["active"]))


def test_an_admin_cli_after_a_rotation_loses_no_acknowledged_entry(fresh_server: Server) -> None:
    server = fresh_server.start()
    rotate_and_wait(server)
    time.sleep(1.5)  # the rotation's second ledger handle has been opened and closed
    listed = tenure("apikey", "list", "--data", str(server.data))
    assert listed.returncode == 0, listed.stderr
    assert (server.data / "tenure.db-wal").exists(), "the running server's WAL was deleted"
    acks, name = [], rid()
    with server.client() as client:
        for _ in range(3):
            acks.append(acknowledged(lease(client, "acquire", resource=rid(), holder="w").json()))
        acks.append(acknowledged(lease(client, "acquire", resource=name, holder="w").json()))
    revoked = tenure(
        "lease", "revoke", name, "--reason", "test", "--data", str(server.data), "--keys",
        str(server.root / "keys"), "--json",
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    revoke_index = json.loads(revoked.stdout)["revoked"][0]["ledgerIndex"]
    with server.client() as client:
        after = acknowledged(lease(client, "acquire", resource=rid(), holder="w").json())
    assert after[0] == revoke_index + 1
    server.stop()
    leaves = exported(server.root, server.data)
    assert_all_kept([*acks, after], leaves)
    assert revoke_index in leaves and len(leaves) == revoke_index + 2


@pytest.mark.parametrize("through_symlink", [False, True])
def test_a_second_serve_after_a_rotation_joins_the_same_ledger(
    fresh_server: Server, through_symlink: bool
) -> None:
    first = fresh_server.start()
    name = rid()
    with first.client() as a:
        held = lease(a, "acquire", resource=name, holder="a", ttlSeconds=300).json()
    rotate_and_wait(first)
    time.sleep(1.5)
    data = first.data
    if through_symlink:
        data = first.root / "linked"
        data.symlink_to(first.data)
    second = start_on(beside(first, "--workers", "1"), data)
    try:
        with first.client() as a, second.client() as b:
            refused = lease(b, "acquire", resource=name, holder="b")
            assert refused.status_code == 409, refused.text
            assert refused.json()["data"]["outcome"] == "HELD"
            assert lease(b, "get", resource=name).json()["data"]["holder"] == "a"
            acks = [acknowledged(held)]
            for client in (a, b, a, b):
                acks.append(
                    acknowledged(lease(client, "acquire", resource=rid(), holder="w").json())
                )
    finally:
        second.stop()
    first.stop()
    assert_all_kept(acks, exported(first.root, first.data))


def test_another_keys_folder_is_refused_with_exit_2(fresh_server: Server) -> None:
    first = fresh_server.start()
    other = Server(first.root / "other", args=["--data", str(first.data)])
    other.root.mkdir()
    done = tenure("serve", "--port", "1", "--data", str(first.data), "--keys", str(other.root))
    assert done.returncode == 2
    assert "another keys folder" in done.stderr and "Traceback" not in done.stderr
    with first.client() as client:
        assert lease(client, "acquire", resource=rid(), holder="w").status_code == 201


def test_a_newer_ledger_is_refused_by_an_older_version(fresh_server: Server) -> None:
    server = fresh_server.start()
    server.stop()
    from ledger.sqlite.schema import SCHEMA_VERSION

    with sqlite3.connect(server.data / "tenure.db") as conn:  # as a newer tenure would leave it
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    keys = str(server.root / "keys")
    done = tenure("serve", "--port", "0", "--data", str(server.data), "--keys", keys)
    assert done.returncode == 2
    assert "newer than this server" in done.stderr and "Traceback" not in done.stderr


def test_no_migration_runs_under_a_live_older_server(tmp_path: Path) -> None:
    """A ledger one step behind, served by a live worker of the older version: this version
    refuses to upgrade it under that worker, and upgrades it once the worker is gone."""
    from ledger.sqlite.cluster import Cluster
    from ledger.sqlite.opening import open_db
    from ledger.sqlite.schema import SCHEMA_VERSION
    from ledger.storage import StorageError

    conn, _ = open_db(tmp_path, None)  # without the names key: stops before the sealing step
    conn.close()
    older = Cluster(tmp_path)  # a worker of the older version, alive
    try:
        with pytest.raises(StorageError, match="older version serves this folder"):
            open_db(tmp_path, _names())
    finally:
        older.close()
    conn, version = open_db(tmp_path, _names())
    conn.close()
    assert version == SCHEMA_VERSION


def _names() -> Any:
    from ledger.keys.names import NameCodec

    return NameCodec(bytes(32))


class Hammer:
    """Acquires of fresh names from a few threads against one server until stopped; every
    acknowledged (201) answer kept. Bounded in count and time."""

    def __init__(self, server: Server, threads: int = 4) -> None:
        self.server, self.acks = server, list[tuple[int, str]]()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run) for _ in range(threads)]

    def _run(self) -> None:
        with self.server.client() as client:
            deadline = time.monotonic() + 60
            while not self.stop.is_set() and time.monotonic() < deadline:
                try:
                    answer = lease(client, "acquire", resource=rid(), holder="w")
                except httpx.HTTPError:
                    return  # the server is gone: what it acknowledged is kept
                if answer.status_code == 201:
                    self.acks.append(acknowledged(answer.json()))

    def __enter__(self) -> Hammer:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


@pytest.mark.parametrize("victim", ["first", "second"])
def test_kill_9_of_either_serve_mid_write_loses_nothing(fresh_server: Server, victim: str) -> None:
    first = fresh_server.start()
    rotate_and_wait(first)
    second = start_on(beside(first, "--workers", "1"), first.data)
    killed, survivor = (first, second) if victim == "first" else (second, first)
    try:
        with Hammer(first) as on_first, Hammer(second) as on_second:
            time.sleep(1.0)
            killed.stop(signal.SIGKILL)
            time.sleep(1.0)
        with survivor.client() as client:
            acks = [acknowledged(lease(client, "acquire", resource=rid(), holder="w").json())]
    finally:
        survivor.stop()
    acks += on_first.acks + on_second.acks
    assert len(on_first.acks) > 10 and len(on_second.acks) > 10
    assert_all_kept(acks, exported(first.root, first.data))
