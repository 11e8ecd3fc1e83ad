"""Readers' sealing is bounded across the worker processes of a ledger, not per process: the
turn (``ledger/writer/sealturn.py``) is one ``flock`` for the host of a SQLite folder, one advisory
lock
for every node of a PostgreSQL database, and the time of the last sealing travels with it. Real
files, a real PostgreSQL, real processes (a holder killed with -9), two real runtimes on one
folder."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from ledger.lease.calls import LeaseCall
from ledger.postgres.backend import PostgresStorage
from ledger.postgres.sealturn import DatabaseTurn
from ledger.runtime import SEAL_SPACING, Runtime, RuntimeConfig
from ledger.sqlite.cluster import lock_held
from ledger.sqlite.sealturn import HostTurn
from ledger.writer.sealturn import wait_before
from tests.names_key import NAMES

ROOT = Path(__file__).resolve().parent.parent


def test_the_turn_is_exclusive_and_carries_the_last_sealing(tmp_path: Path) -> None:
    path = tmp_path / "seal.lock"
    first, second = HostTurn(path), HostTurn(path)
    assert first.take() == 0.0  # never sealed
    assert lock_held(path)
    first.give(1234.5)
    assert not lock_held(path)
    assert second.take() == 1234.5
    second.give(None)  # a turn that sealed nothing leaves the mark as it was
    assert first.take() == 1234.5
    first.give(None)


def test_a_holder_killed_with_minus_9_gives_the_turn_back(tmp_path: Path) -> None:
    path = tmp_path / "seal.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path\n"
            "from ledger.sqlite.sealturn import HostTurn\n"
            "t = HostTurn(Path(sys.argv[1])); t.take(); t.give(77.0); t.take()\n"
            "print('held', flush=True); time.sleep(60)",
            str(path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert lock_held(path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    turn = HostTurn(path)
    assert turn.take() == 77.0
    turn.give(None)


def test_the_database_turn_is_one_for_every_node_and_carries_the_mark(postgres_url: str) -> None:
    """Two nodes' turns on one database (each its own session): the second waits while the
    first holds it, then reads the mark the first left; a turn that sealed nothing keeps it."""
    PostgresStorage.open(postgres_url, names=NAMES).close()  # a ledger's schema, its meta table
    first, second = DatabaseTurn(postgres_url), DatabaseTurn(postgres_url)
    try:
        assert first.take() == 0.0  # never sealed
        taken: list[float] = []
        waiting = threading.Thread(target=lambda: taken.append(second.take()))
        waiting.start()
        _wait_until_blocked(postgres_url)
        assert not taken  # held by the other node: the database has the second one waiting
        first.give(1234.5)
        waiting.join(5)
        assert taken == [1234.5]
        second.give(None)
        assert first.take() == 1234.5
        first.give(None)
    finally:
        first.close()
        second.close()


def _wait_until_blocked(url: str) -> None:
    """Until a session waits for an advisory lock it has not been granted (the database says
    so: no guess at how long waiting takes)."""
    query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with psycopg.connect(url) as conn:
        for _ in range(500):
            row = conn.execute(query).fetchone()
            if row is not None and row[0] == 1:
                return
            time.sleep(0.01)
    raise AssertionError("the second turn never waited for the lock")


def test_a_node_that_dies_holding_the_database_turn_gives_it_back(postgres_url: str) -> None:
    PostgresStorage.open(postgres_url, names=NAMES).close()  # a ledger's schema, its meta table
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from ledger.postgres.sealturn import DatabaseTurn\n"
            "t = DatabaseTurn(sys.argv[1]); t.take(); t.give(77.0); t.take()\n"
            "print('held', flush=True); time.sleep(60)",
            postgres_url,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    turn = DatabaseTurn(postgres_url)
    try:
        assert turn.take() == 77.0  # the database ended the dead session's transaction
        turn.give(None)
    finally:
        turn.close()


@pytest.mark.parametrize(
    ("sealed_at", "now", "wait"),
    [(100.0, 100.25, 0.75), (100.0, 101.5, 0.0), (0.0, 100.0, 0.0), (200.0, 100.0, 1.0)],
)
def test_the_wait_before_the_next_sealing(sealed_at: float, now: float, wait: float) -> None:
    """Spacing from the last sealing, never negative, never more than the spacing (a wall
    clock stepped back, as in the last case, must not stall readers)."""
    assert wait_before(sealed_at, 1.0, now) == pytest.approx(wait)


@pytest.mark.parametrize("ledger", ["sqlite", "postgres"])
def test_two_workers_readers_share_one_sealing_a_second(
    tmp_path: Path, ledger: str, request: pytest.FixtureRequest
) -> None:
    """Worker B's reader asks 0.25 s after worker A's sealed for its own: B waits out the rest
    of A's second, then seals (a per-process bound let it seal at once) — two workers of one
    folder, or two nodes of one PostgreSQL database. A fixed clock, moved only by the waits."""
    database = request.getfixturevalue("postgres_url") if ledger == "postgres" else None
    now = [1_780_000_000_000]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += round(seconds * 1000)

    async def scenario() -> tuple[int, int]:
        config = RuntimeConfig(
            tmp_path / "data", tmp_path / "keys", database=database, clock=lambda: now[0]
        )
        first = Runtime.open(dataclasses.replace(config, sleep=sleep))
        second = Runtime.open(dataclasses.replace(config, sleep=sleep))
        await first.start()
        await second.start()
        try:
            await first.service.lease(LeaseCall("acquire", "t", "one", holder="w"))
            await first.checkpoint_covering()
            now[0] += 250
            await second.service.lease(LeaseCall("acquire", "t", "two", holder="w"))
            signed = await second.checkpoint_covering()
            return signed.tree_size, len(first.storage.checkpoints(0, 10))
        finally:
            await second.stop()
            await first.stop()

    size, stored = asyncio.run(scenario())
    assert size == 2 and stored == 2
    assert waits == [0.0, pytest.approx(SEAL_SPACING - 0.25)]  # A: never sealed; B: the rest
