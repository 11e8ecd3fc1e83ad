"""Deciding inside the write transaction (docs/decisions/0006): the writer's lasting half.

The group committer runs every lease call as a unit of work in its transaction, on the thread
that writes. The :class:`Decider` keeps only what outlives a transaction — the recorder with
the Merkle frontier, the latest entry time, this process's waiters' futures — and makes one
:class:`~ledger.lease.batch.Batch` per transaction, in which a call is replayed (rule 12), decided,
queued (rule 9) or committed. The frontier is checked against ``tx.tree_size()`` when each
transaction opens, and reloaded if another writer (or a failed commit) moved it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from ledger.lease import waits
from ledger.lease.batch import Batch, Key, Shared
from ledger.lease.calls import (
    Answer,
    LeaseCall,
    Limits,
    StorageUnavailable,
    Waiter,
    new_owner_token,
)
from ledger.lease.entries import entry_time
from ledger.lease.recorder import Recorder
from ledger.lease.replay import draws_owner_token, replayed, request_digest
from ledger.log.merkle import CompactRange
from ledger.storage import Transaction


class Decider:
    """The writer's lasting state; implements :class:`~ledger.writer.units.BatchHooks`."""

    def __init__(
        self,
        master_secret: bytes,
        limits: Limits,
        base: dict[str, Any],
        loop: asyncio.AbstractEventLoop,
        worker: str = "local",
        notify: Callable[[str, str], None] | None = None,
        native: bool = True,
    ) -> None:
        self.recorder = Recorder(CompactRange(), master_secret, native)
        self.local: dict[str, Waiter] = {}
        """This process's waiters by id: the loop adds one before its call is queued."""
        self._shared = Shared(
            master_secret,
            limits,
            base,
            self.recorder,
            worker,
            self.local,
            waits.serve,
            random.Random(),
        )
        self._tree_known = False
        self._loop = loop
        self._notify = notify
        self._batch: Batch | None = None
        self._upcoming: list[Key] = []
        """The resources the next batch's calls name (``prepare``): read together at ``begin``."""
        self._fresh: list[str] = []
        """Owner tokens drawn by ``prepare`` for the next batch's calls."""
        self.floor = 0
        """The latest entry time (ms) this writer knows the log holds, its own or another
        writer's: no decision is taken before it, so times never go backwards (DESIGN §6)."""
        self.token_floor = 0
        """The ledger's fencing floor, read with the frontier (``ledger/fencing_floor.py``)."""

    # -- the committer's hooks ---------------------------------------------------------------

    def begin(self, tx: Transaction) -> None:
        size = tx.tree_size()
        if not self._tree_known or self.recorder.tree.size != size:
            self.recorder.tree = CompactRange.load(size, tx.node)
            self._tree_known = True
            last = tx.entry(size - 1) if size else None  # another writer's, perhaps
            self.floor = max(self.floor, 0 if last is None else entry_time(last))
            self.token_floor = tx.fencing_floor()  # set while no writer ran (a restore)
        upcoming, self._upcoming = self._upcoming, []
        fresh, self._fresh = self._fresh, []
        batch = Batch(tx, self._shared, fresh, self.floor, self.token_floor)
        if upcoming:
            batch.read_ahead(upcoming)
        self._batch = batch

    def committed(self) -> None:
        batch, self._batch = self._batch, None
        if batch is None:
            return
        self.floor = batch.floor
        for worker, waiter_id in batch.served:
            waiter = self.local.get(waiter_id) if worker == self._shared.worker else None
            if waiter is not None:
                self._loop.call_soon_threadsafe(_grant, waiter)
            elif self._notify is not None:
                self._notify(worker, waiter_id)

    def abandoned(self) -> None:
        """The transaction was rolled back to be tried again without a unit that raised: forget
        the frontier it moved and what it handed this process's waiters; they wait on."""
        batch, self._batch = self._batch, None
        self._tree_known = False
        for _, waiter_id in [] if batch is None else batch.served:
            waiter = self.local.get(waiter_id)
            if waiter is not None:
                waiter.granted = waiter.refused = None

    def failed(self, error: BaseException) -> None:
        """Nothing of the batch is on disk: forget the frontier and fail this process's waiters
        (their rows, if any survive, are dropped when next met: nobody here collects them)."""
        batch, self._batch = self._batch, None
        if batch is not None:
            self.floor = batch.floor
        self._tree_known = False
        self._upcoming, self._fresh = [], []
        failure = StorageUnavailable(f"the ledger could not be written: {error}")
        for waiter in list(self.local.values()):
            waiter.granted = None
            self._loop.call_soon_threadsafe(_fail, waiter, failure)

    # -- units of work -----------------------------------------------------------------------

    @property
    def batch(self) -> Batch:
        """The open transaction's batch."""
        assert self._batch is not None, "a unit of work runs inside the committer's transaction"
        return self._batch

    def lease(self, call: LeaseCall, now: int, waiter: Waiter | None) -> Answer | None:
        """Decide one call; ``None`` if it joined the wait queue (``waiter`` given, held)."""
        batch = self._batch
        assert batch is not None, "a unit of work runs inside the committer's transaction"
        now = batch.at(now)
        digest = request_digest(batch, call)
        if digest is not None:
            replay = replayed(batch, call, digest, now)
            if replay is not None:
                return replay
        res = batch.resource(call.tenant, call.resource)
        token = batch.owner_token(call, None if waiter is None else waiter.waiter_id)
        decision = batch.decide(call, res, now, token)
        if waiter is not None and waits.should_wait(call, decision):
            batch.record(res, decision)  # expiries found on the way are recorded all the same
            waits.join(batch, call, waiter, digest)
            return None
        return batch.commit(call, res, decision, now, token, digest)

    def prepare(self, call: LeaseCall) -> None:
        """Before the transaction: draw the owner token a fresh grant would carry, derive the
        pseudonyms recording ``call`` will name (the recorder remembers them) and note its
        resource, which ``begin`` reads with the rest of the batch's: less under the lock."""
        self._upcoming.append((call.tenant, call.resource))
        if draws_owner_token(call):
            self._fresh.append(new_owner_token())  # used unless the call waits
        names = self.recorder.pseudonyms(call.tenant)
        names.resource(call.resource)
        if call.holder is not None:
            names.holder(call.holder)
        if call.scope is not None:
            names.scope(call.scope)


def _grant(waiter: Waiter) -> None:
    if waiter.future.done():
        return
    if waiter.refused is not None:
        waiter.future.set_exception(waiter.refused)
    elif waiter.granted is not None:
        waiter.future.set_result(waiter.granted)


def _fail(waiter: Waiter, error: BaseException) -> None:
    if not waiter.future.done():
        waiter.future.set_exception(error)
