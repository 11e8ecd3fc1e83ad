"""Group commit over any storage backend (docs/decisions/0003, 0005).

The request path never waits for its own fsync alone: every mutation is handed to one writer
thread as a unit of work — today a list of typed changes (``ledger/changes.py``), later possibly a
function of the open transaction — and the writer runs everything queued since its last commit in
ONE ``storage.transaction()``. Callers await a future that resolves once their work is durable,
and only then answer.

If a commit fails the writer refuses every later batch until :meth:`GroupCommitter.reset`: the
in-memory state above it has run ahead of the disk, and the service must reload before it answers
again (DESIGN §3.3: 503 with ``status: unknown``).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence

from ledger import metrics
from ledger.changes import Change
from ledger.storage import Storage, StorageError, Transaction

Work = Sequence[Change] | Callable[[Transaction], None]
"""One caller's unit of work: changes to apply in order, or a function run in the transaction."""

_Item = tuple[Work, "asyncio.Future[None]"]


class GroupCommitter:
    """One writer thread; each commit carries every batch queued since the last one."""

    def __init__(self, storage: Storage, loop: asyncio.AbstractEventLoop) -> None:
        self._storage = storage
        self._loop = loop
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._last: asyncio.Future[None] | None = None
        self.failure: BaseException | None = None
        self.commits = 0
        self._thread = threading.Thread(target=self._run, name="tenure-writer", daemon=True)
        self._thread.start()

    def submit(self, work: Work) -> asyncio.Future[None]:
        """Queue ``work`` for the next commit; the future resolves once it is durable."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._queue.put((work, future))
        self._last = future
        return future

    def barrier(self) -> asyncio.Future[None] | None:
        """The future of the newest batch if it is not yet durable: reads wait for it."""
        last = self._last
        return None if last is None or last.done() else last

    def reset(self) -> None:
        self.failure = None

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            stop = self._drain(batch)
            error = self._commit(batch)
            self._loop.call_soon_threadsafe(_resolve, batch, error)
            if stop:
                return

    def _drain(self, batch: list[_Item]) -> bool:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)

    def _commit(self, batch: list[_Item]) -> BaseException | None:
        if self.failure is not None:
            return self.failure
        started = metrics.commit_started()
        try:
            with self._storage.transaction() as tx:
                for work, _ in batch:
                    _run_work(tx, work)
            self.commits += 1
            metrics.commit_done(len(batch), started)
            return None
        except BaseException as error:  # any failure leaves the outcome unknown
            metrics.commit_done(len(batch), started, ok=False)
            self.failure = error
            return error


def _run_work(tx: Transaction, work: Work) -> None:
    if callable(work):
        work(tx)
        return
    apply = tx.apply
    for change in work:
        apply(change)


def _resolve(batch: list[_Item], error: BaseException | None) -> None:
    for _, future in batch:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(StorageError(str(error)))
