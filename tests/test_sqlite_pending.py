"""SQLite's writer does little while it holds the ledger's lock (decisions/0012): a
batch's hot changes in a few statements per table, the calls queued meanwhile in the same batch."""

from __future__ import annotations

import asyncio
import fcntl
import threading
from pathlib import Path

from ledger.changes import AppendEntry, PutLease, PutNodes, PutResource
from ledger.sqlite.backend import SQLiteStorage
from ledger.sqlite.pending import chunks
from ledger.sqlite.writelock import LOCK_NAME
from ledger.writer.committer import GroupCommitter
from tests.names_key import NAMES


def test_a_batch_of_grants_takes_a_few_statements_not_four_per_event(tmp_path: Path) -> None:
    storage = SQLiteStorage.open(tmp_path, NAMES)
    statements: list[str] = []
    storage._writer.set_trace_callback(statements.append)
    keys = [("t", f"job-{n}") for n in range(100)]
    with storage.transaction() as tx:
        assert tx.resources(keys) == {}
        for n, (tenant, name) in enumerate(keys):
            tx.apply(AppendEntry(n, b"{}"))
            tx.apply(PutNodes(((0, n, bytes(32)),)))
            tx.apply(PutResource(tenant, name, 1, 1, None, None, None, None, None))
            tx.apply(PutLease(tenant, name, 1, "w", bytes(32), 9, None, n))
    writes = [s for s in statements if s.startswith(("INSERT", "UPDATE", "DELETE"))]
    assert len(writes) == 4 * 3  # per table, 100 rows in statements of 64, 32 and 4 (not 400)
    assert storage.tree_size() == 100
    with storage.transaction() as tx:
        assert len(tx.resources(keys)) == 100
    storage.close()


def test_chunks_cover_every_row_once_in_powers_of_two() -> None:
    for total in range(300):
        runs = list(chunks(total))
        assert [n for start, count in runs for n in range(start, start + count)] == list(
            range(total)
        )
        assert all(count & (count - 1) == 0 and count <= 64 for _, count in runs)


def test_calls_queued_while_the_lock_is_held_elsewhere_join_the_waiting_batch(
    tmp_path: Path,
) -> None:
    """Another writer holds the ledger's lock; a unit queued while this process's batch waits
    for it joins that batch: one transaction, one fsync (docs/decisions/0012)."""

    async def scenario() -> None:
        storage = SQLiteStorage.open(tmp_path, NAMES)
        committer = GroupCommitter(storage, asyncio.get_running_loop())
        prepared = threading.Event()
        with open(tmp_path / LOCK_NAME, "rb+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            first = committer.submit([AppendEntry(0, b"{}")], prepare=prepared.set)
            assert await asyncio.to_thread(prepared.wait, 5)  # drained alone; the lock is held
            second = committer.submit([AppendEntry(1, b"{}")])
            fcntl.flock(lock, fcntl.LOCK_UN)
        await asyncio.gather(first, second)
        assert committer.commits == 1 and storage.tree_size() == 2
        committer.close()
        storage.close()

    asyncio.run(scenario())
