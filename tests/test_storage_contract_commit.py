"""The storage contract's group commit (docs/decisions/0012, 0006) on every backend
(tests/storage_util.py): units queued while a batch waits for its transaction join it, and a
failed commit refuses only the units it carried — whether the backend writes on a writer thread
or lends its lock's turns to the event loop (docs/decisions/0017).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ledger.changes import AppendEntry
from ledger.storage import Storage, StorageError, Transaction
from ledger.writer.committer import GroupCommitter
from ledger.writer.strategy import Turns
from tests import storage_util
from tests.storage_util import REQUEST

# The fixtures, taken by name: every test here runs on every backend.
location, reopen, storage = storage_util.location, storage_util.reopen, storage_util.storage


class Gated:
    """The backend under test, whose writers can be held back or whose transactions made to
    fail once. A writer waits at :attr:`gate` where it would wait for another writer's lock:
    in the transaction on a writer thread, in the lock's loan on lent turns (decisions/0017)."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.arrived = threading.Event()
        """Set once a writer waits at the gate."""
        self.opened = 0
        self.gate = threading.Event()
        self.fail_next = False

    def transaction(self) -> AbstractContextManager[Transaction]:
        return self._transaction()

    def turns(self) -> GatedTurns | None:
        inner = self.inner.turns()
        return None if inner is None else GatedTurns(self, inner)

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        if self.inner.turns() is None:
            self.wait()
        self.opened += 1
        with self.inner.transaction() as tx:
            if self.fail_next:
                self.fail_next = False
                raise OSError("disk full")
            yield tx

    def wait(self) -> None:
        self.arrived.set()
        self.gate.wait(5)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class GatedTurns:
    """A backend's lent turns, each waiting at the gate first."""

    def __init__(self, gated: Gated, inner: Turns) -> None:
        self.gated, self.inner = gated, inner

    def lend(self, thread: int) -> None:
        self.gated.wait()
        self.inner.lend(thread)

    def give_back(self) -> None:
        self.inner.give_back()


def run(scenario: Callable[[Gated, GroupCommitter], Any], storage: Storage) -> None:
    async def main() -> None:
        gated = Gated(storage)
        committer = GroupCommitter(gated, asyncio.get_running_loop())  # type: ignore[arg-type]
        try:
            await scenario(gated, committer)
        finally:
            gated.gate.set()
            committer.close()

    asyncio.run(main())


async def held_first_commit(gated: Gated, committer: GroupCommitter) -> list[Any]:
    """One batch waits at the gate (as for another writer's lock) while three more queue;
    returns all four futures."""
    first = committer.submit([AppendEntry(0, b"{}")])
    assert await asyncio.to_thread(gated.arrived.wait, 5)  # the first batch waits for the lock
    rest = [
        committer.submit([AppendEntry(1, b"{}")]),
        committer.submit(lambda tx: tx.apply(AppendEntry(2, b"{}"))),  # a function of the tx
        committer.submit([AppendEntry(3, b"{}"), REQUEST]),
    ]
    gated.gate.set()
    return [first, *rest]


def test_group_commit_runs_queued_batches_in_one_transaction(storage: Storage) -> None:
    """Units queued while a batch waits for its transaction join it (docs/decisions/0012)."""

    async def scenario(gated: Gated, committer: GroupCommitter) -> None:
        futures = await held_first_commit(gated, committer)
        await asyncio.gather(*futures)
        assert (gated.opened, committer.commits) == (1, 1)
        assert storage.tree_size() == 4
        assert [i for i, _ in storage.entries(0, 9)] == [0, 1, 2, 3]

    run(scenario, storage)


def test_a_failed_commit_refuses_its_batch_and_the_next_one_tries_again(storage: Storage) -> None:
    """docs/decisions/0006: no state in memory runs ahead of the disk, so a failed commit
    refuses only the units it carried; the next batch commits as usual."""

    async def scenario(gated: Gated, committer: GroupCommitter) -> None:
        gated.fail_next = True
        futures = await held_first_commit(gated, committer)
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert isinstance(results[0], StorageError)
        assert all(r is None or isinstance(r, StorageError) for r in results)
        kept = [n for n, result in enumerate(results) if result is None]
        assert kept in ([1, 2, 3], [])  # queued behind it (a writer thread), or with it (turns)
        assert [i for i, _ in storage.entries(0, 9)] == kept  # nothing of the failed batch
        following = storage.tree_size()
        await committer.submit([AppendEntry(following, b"{}")])  # the next batch commits
        assert committer.failure is None
        assert [i for i, _ in storage.entries(0, 9)] == [*kept, following]

    run(scenario, storage)
