"""WAL checkpoints outside the writers' critical section (ledger/sqlite/checkpointer.py).

A real SQLite file in WAL mode with ``synchronous=FULL``: the writer never checkpoints on its
own, the checkpointer copies the WAL into the database beside the writers, takes the writers'
lock only to finish a long WAL, and keeps the WAL from growing without end while commits land.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from ledger.sqlite.backend import SQLiteStorage
from ledger.sqlite.checkpointer import Checkpointer
from ledger.sqlite.schema import connect
from tests.names_key import NAMES

PAGE = 4096


def _ledger(tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    path = tmp_path / "t.db"
    writer = connect(path)
    writer.execute("PRAGMA wal_autocheckpoint=0")  # as SQLiteStorage's writer, once it writes
    writer.execute("CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")
    return path, writer


def _commit(writer: sqlite3.Connection, rows: int = 20) -> None:
    writer.execute("BEGIN IMMEDIATE")
    writer.executemany("INSERT INTO t VALUES (randomblob(32), randomblob(600))", [()] * rows)
    writer.execute("COMMIT")


def _wal_size(path: Path) -> int:
    return Path(str(path) + "-wal").stat().st_size


class Recorded:
    """A writers' lock that counts how often it was taken, and who is waiting for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.taken = 0
        self.waiting = 0
        self._turns = threading.Condition()

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._turns:
            self.waiting += 1
        with self.lock:
            with self._turns:
                self.waiting -= 1
                self.taken += 1
                self._turns.notify_all()
            yield

    def let_waiters_in(self) -> None:
        """Return once every thread waiting for the lock has taken it — what a writer's gap
        between two groups (gathering its next batch) gives the checkpointer; a thread lock is
        not fair, and a loop that takes it again at once could keep the checkpointer out."""
        with self._turns:
            self._turns.wait_for(lambda: self.waiting == 0)


def test_without_checkpoints_the_wal_only_grows_and_a_checkpoint_makes_it_start_over(
    tmp_path: Path,
) -> None:
    path, writer = _ledger(tmp_path)
    for _ in range(10):
        _commit(writer)
    first = _wal_size(path)
    for _ in range(10):
        _commit(writer)
    assert _wal_size(path) > first * 1.8  # the writer itself never checkpointed
    checkpointer = Checkpointer(path, Recorded().held, restart_frames=10**9)
    frames, copied, busy = checkpointer.run_once()
    assert frames == copied > 0 and not busy  # everything copied: no writer was busy
    grown = _wal_size(path)
    for _ in range(10):
        _commit(writer)
    assert _wal_size(path) == grown  # the next commits wrote the WAL from its start again
    assert writer.execute("SELECT count(*) FROM t").fetchone()[0] == 600
    checkpointer.close()


def test_the_writers_lock_is_taken_only_to_start_a_long_wal_over(tmp_path: Path) -> None:
    path, writer = _ledger(tmp_path)
    for _ in range(5):
        _commit(writer)
    lock = Recorded()
    frames = Checkpointer(path, lock.held, restart_frames=10**9).run_once()[0]
    assert lock.taken == 0  # a short WAL: copied beside the writers, never under their lock
    restart = Checkpointer(path, lock.held, restart_frames=frames)
    assert restart.run_once()[2] is False and lock.taken == 1
    before = _wal_size(path)
    _commit(writer)
    assert _wal_size(path) == before  # written from its start again


def test_a_restart_is_timed_for_the_metrics_once_the_writers_may_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, writer = _ledger(tmp_path)
    for _ in range(5):
        _commit(writer)
    lock, observed = Recorded(), []

    def checkpointed(mode: str, seconds: float) -> None:
        observed.append((mode, seconds > 0, lock.lock.locked()))

    monkeypatch.setattr("ledger.sqlite.checkpointer.metrics.sqlite_checkpointed", checkpointed)
    Checkpointer(path, lock.held, restart_frames=1).run_once()
    assert lock.taken == 1
    assert observed == [("passive", True, False), ("restart", True, False)]


def test_a_reader_holding_an_old_snapshot_is_not_waited_for(tmp_path: Path) -> None:
    path, writer = _ledger(tmp_path)
    _commit(writer)
    reader = connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()  # an export's snapshot, say
    for _ in range(5):
        _commit(writer)
    lock = Recorded()
    checkpointer = Checkpointer(path, lock.held, restart_frames=1)
    frames, copied, busy = checkpointer.run_once()
    assert busy and copied < frames and lock.taken == 1  # refused at once, the lock let go
    grown = _wal_size(path)
    _commit(writer)
    assert _wal_size(path) > grown  # not started over: the reader may still need those frames
    reader.execute("COMMIT")
    assert checkpointer.run_once()[2] is False
    before = _wal_size(path)
    _commit(writer)
    assert _wal_size(path) == before  # written from its start again: no longer growing
    checkpointer.close()


def test_the_wal_stays_bounded_while_commits_land_during_checkpoints(tmp_path: Path) -> None:
    path, writer = _ledger(tmp_path)
    lock = Recorded()
    checkpointer = Checkpointer(path, lock.held, every=0.001, restart_frames=200)
    checkpointer.start()
    largest = 0
    for _ in range(600):  # ~10 pages a commit: 6,000 frames, 30 times the restart mark
        with lock.held():
            _commit(writer)
        largest = max(largest, _wal_size(path))
        lock.let_waiters_in()
    checkpointer.close()
    assert lock.taken > 600  # some rounds had to finish under the lock
    assert largest < 1200 * (PAGE + 24)  # bounded near the mark, not 6,000 frames
    assert writer.execute("SELECT count(*) FROM t").fetchone()[0] == 600 * 20


def test_a_storage_checkpoints_from_its_own_thread_once_it_writes(tmp_path: Path) -> None:
    before = set(threading.enumerate())  # another test's storage left open is not this one's

    def started() -> list[threading.Thread]:
        found = set(threading.enumerate()) - before
        return [thread for thread in found if thread.name == "tenure-checkpointer"]

    storage = SQLiteStorage.open(tmp_path / "data", NAMES)
    storage.close()  # opening alone (a reader, an audit) starts nothing
    assert started() == []
    storage = SQLiteStorage.open(tmp_path / "data", NAMES)
    with storage.transaction():
        pass
    (thread,) = started()
    assert thread.is_alive()
    storage.close()
    assert not thread.is_alive()


def _count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name + "_count", labels) or 0.0


def test_commits_and_checkpoints_are_timed_for_metrics(tmp_path: Path) -> None:
    path, writer = _ledger(tmp_path)
    for _ in range(3):
        _commit(writer)
    passive = _count("tenure_sqlite_checkpoint_seconds", mode="passive")
    restart = _count("tenure_sqlite_checkpoint_seconds", mode="restart")
    checkpointer = Checkpointer(path, Recorded().held, restart_frames=1)
    checkpointer.run_once()
    assert _count("tenure_sqlite_checkpoint_seconds", mode="passive") == passive + 1
    assert _count("tenure_sqlite_checkpoint_seconds", mode="restart") == restart + 1
    checkpointer.close()
    commits = _count("tenure_sqlite_commit_seconds")
    held = _count("tenure_sqlite_lock_held_seconds")
    storage = SQLiteStorage.open(tmp_path / "data", NAMES)
    for _ in range(2):
        with storage.transaction():
            pass
    storage.close()
    assert _count("tenure_sqlite_commit_seconds") == commits + 2
    assert _count("tenure_sqlite_lock_held_seconds") == held + 2  # a short WAL: no RESTART
