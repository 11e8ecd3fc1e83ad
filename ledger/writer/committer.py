"""Group commit over any storage backend (docs/decisions/0003, 0005, 0006, 0014, 0017, 0018).

Every caller's unit of work (a function of the open transaction, or typed changes) goes to one
writer, which runs everything queued since its last commit in ONE ``storage.transaction()``; a
unit's future resolves once that transaction is durable. The backend's
:class:`~ledger.storage.WriterStrategy` says who writes: a writer thread (whose units may also
get an early future once their statements ran), or — where the write lock can be lent
(SQLite) — the event loop itself, on turns of the lock a helper thread waits for. A failed
commit fails every unit of its batch with :class:`~ledger.storage.StorageError`; ``hooks`` keep
per-transaction state (``begin``, ``committed``, ``failed``) on the thread that writes.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ledger import metrics
from ledger.changes import Change
from ledger.storage import Storage, Transaction
from ledger.writer.strategy import WriterStrategy, writer_strategy
from ledger.writer.units import (
    BatchHooks,
    Item,
    Prepare,
    RetryHooks,
    UnitFailed,
    prepare_all,
    resolve,
    resolve_early,
    run_units,
)

T = TypeVar("T")


class GroupCommitter:
    """One writer — a thread, or the event loop on lent turns; each commit carries every unit
    queued since the last one. Made on the event loop's thread."""

    def __init__(
        self,
        storage: Storage,
        loop: asyncio.AbstractEventLoop,
        hooks: BatchHooks | None = None,
        strategy: WriterStrategy | None = None,
    ) -> None:
        self._storage = storage
        self._loop = loop
        self._hooks = hooks
        self._retry = hooks if isinstance(hooks, RetryHooks) else None
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._last: asyncio.Future[Any] | None = None
        self.failure: BaseException | None = None
        """The error of the last commit if it failed; ``None`` once a commit succeeds again."""
        self.commits = 0
        self._stopping = False
        self._turns = (writer_strategy(storage) if strategy is None else strategy).turns()
        self._units: list[Item] = []
        """The loop's units waiting for its next turn (with lent turns)."""
        self._asked = False
        """Whether a turn not yet run has been asked for (or is about to be)."""
        self._ask_soon: asyncio.Handle | None = None
        """The loop's callback that will ask, while it waits behind the loop's other work."""
        self._asked_at = 0.0
        """When it was asked: the turn's wait for the lock is measured from there."""
        self._timing: tuple[int, float, float, float, bool] | None = None
        """The last commit's figures, observed once the lock is given back (:meth:`_observe`)."""
        target = self._run if self._turns is None else self._take_turns
        name = "tenure-writer" if self._turns is None else "tenure-turns"
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._borrower = threading.get_ident()
        self._thread.start()

    def submit(
        self,
        work: Callable[[Transaction], T] | Sequence[Change],
        prepare: Prepare | None = None,
    ) -> asyncio.Future[T]:
        """Queue ``work`` for the next commit; the future resolves with its value once durable.

        ``prepare`` runs before the batch's transaction opens — on the loop as the unit is
        queued (lent turns), else on the writer thread — while another process may hold the
        ledger's lock, so the transaction, which excludes every other writer, does less. It may
        only warm caches: an error in it is ignored, and the unit itself meets it again inside
        the transaction.
        """
        future: asyncio.Future[T] = self._loop.create_future()
        self._put((work, future, prepare, None))
        self._last = future
        return future

    def submit_early(
        self,
        work: Callable[[Transaction], T],
        prepare: Prepare | None = None,
    ) -> tuple[asyncio.Future[T], asyncio.Future[T]]:
        """:meth:`submit`, with a first future that resolves with the unit's value as soon as
        the batch's statements have run — while its commit is still being made durable — and
        the second once it is durable (docs/decisions/0014). The caller may work on the value
        meanwhile (the lease route signs its answer) but must show nobody anything of it before
        the second resolves: if the commit fails, the second fails, and the value never was.
        On lent turns nothing of a batch overlaps its commit: both are the one durable future."""
        if self._turns is not None:
            durable = self.submit(work, prepare)
            return durable, durable
        early: asyncio.Future[T] = self._loop.create_future()
        future: asyncio.Future[T] = self._loop.create_future()
        self._put((work, future, prepare, early))
        self._last = future
        return early, future

    def barrier(self) -> asyncio.Future[Any] | None:
        """The future of the newest unit if it is not yet durable: reads wait for it."""
        last = self._last
        return None if last is None or last.done() else last

    def close(self) -> None:
        """Stop the writer thread (or the helper) once what is queued is written; with lent
        turns, a turn the helper already took runs when the loop next runs. Called on the
        loop's thread."""
        if self._ask_soon is not None:  # units wait for an ask the loop has not run yet
            self._ask_soon.cancel()
            self._ask()
        self._queue.put(None)
        self._thread.join()

    def _put(self, item: Item) -> None:
        if self._turns is None:
            self._queue.put(item)
            return
        prepare_all([item])  # here, on the loop, outside the lock
        self._units.append(item)
        if not self._asked:
            self._asked = True
            self._ask_soon = self._loop.call_soon(self._ask)

    def _take_turns(self) -> None:
        """The helper thread: for each turn asked, wait for the lock, lend it to the loop."""
        turns = self._turns
        assert turns is not None
        while self._queue.get() is not None:
            turns.lend(self._borrower)
            try:
                self._loop.call_soon_threadsafe(self._turn)
            except RuntimeError:  # the loop is closed: nobody will write
                turns.give_back()
                return

    def _turn(self) -> None:
        """On the loop, holding the lent lock: write every unit queued, give the lock back."""
        assert self._turns is not None
        batch, self._units = self._units, []
        try:
            results, error = self._commit(batch, self._asked_at)
        finally:
            self._turns.give_back()
        self._observe()
        self._asked = bool(self._units)
        if self._asked:
            self._ask()
        resolve(batch, results, error)

    def _observe(self) -> None:
        """The last commit's metrics, outside the ledger's lock (a turn holds it to the end)."""
        timing, self._timing = self._timing, None
        if timing is not None:
            metrics.commit_done(*timing)

    def _ask(self) -> None:
        """Ask the helper for a turn (the queue's item is only its signal). The first unit
        after a turn asks once the loop has run the callbacks it already had — the answers of
        the batch just written: a lock lent then finds the loop free to write at once, where it
        would otherwise hold the ledger's lock through that backlog (docs/decisions/0018)."""
        self._ask_soon, self._asked_at = None, metrics.commit_started()
        self._queue.put(self._units[0])

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            self._stopping = self._drain(batch)
            prepare_all(batch)
            results, error = self._commit_units(batch)
            self._observe()
            self._loop.call_soon_threadsafe(resolve, batch, results, error)
            if self._stopping:
                return

    def _drain(self, batch: list[Item]) -> bool:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)

    def _commit_units(self, batch: list[Item]) -> tuple[list[Any], BaseException | None]:
        """The writer thread's commit of ``batch`` (late units join it). A unit that raises
        fails alone: the transaction is rolled back and the other units are tried once more
        without it, so one bad decision does not cost its group; if that fails too, they fail.
        Without :class:`RetryHooks` the whole batch fails, as any failure does."""
        results, error = self._commit(batch, join_late=True)
        if not isinstance(error, UnitFailed):
            return results, error
        failed = batch.pop(error.index)
        self._loop.call_soon_threadsafe(resolve, [failed], [], error.__cause__)
        return self._commit(batch, metrics.commit_started())

    def _join_late(self, batch: list[Item]) -> None:
        """Units queued while the batch waited for the ledger's lock join it: one fsync for them
        too, where they would wait out another writer's turn again (docs/decisions/0012).
        Their ``prepare`` runs now, inside the transaction, before the batch is decided."""
        if self._stopping:
            return
        first = len(batch)
        self._stopping = self._drain(batch)
        prepare_all(batch[first:])

    def _commit(
        self, batch: list[Item], started: float | None = None, join_late: bool = False
    ) -> tuple[list[Any], BaseException | None]:
        """One transaction for ``batch``; ``started``: when its wait for the lock began;
        ``join_late``: the writer thread's units queued meanwhile join it (on lent turns the
        loop could queue none, and the queue holds only the helper's signals) and a unit that
        raises rolls it back as :class:`UnitFailed` where the hooks can start over."""
        hooks = self._hooks
        started = metrics.commit_started() if started is None else started
        opened = 0.0
        try:
            with self._storage.transaction() as tx:
                opened = metrics.commit_started()
                if join_late:
                    self._join_late(batch)
                if hooks is not None:
                    hooks.begin(tx)
                results = run_units(tx, batch, join_late and self._retry is not None)
                if any(item[3] is not None for item in batch):
                    tx.flush()  # the callers work on their answers during the commit alone
                    self._loop.call_soon_threadsafe(resolve_early, batch, results)
        except UnitFailed as error:  # rolled back, nothing written: the batch starts over
            assert self._retry is not None
            self._retry.abandoned()
            return [], error
        except BaseException as error:  # any failure leaves the outcome unknown
            self._timing = (len(batch), started, opened, metrics.commit_started(), False)
            self.failure = error
            if hooks is not None:
                hooks.failed(error)
            return [], error
        self.failure = None
        self.commits += 1
        self._timing = (len(batch), started, opened, metrics.commit_started(), True)
        if hooks is not None:
            hooks.committed()
        return results, None
