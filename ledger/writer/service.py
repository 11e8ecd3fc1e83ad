"""The lease service: the event loop's half of deciding inside the transaction (0006).

No lease state lives in memory between transactions. Each call becomes a unit of work that the
group committer (``ledger/writer/committer.py``) runs inside one write transaction with every
other call queued since the last commit, on the loop's lent turns of the lock (0017) or on its
writer thread; the :class:`~ledger.lease.decider.Decider` decides there, and the answer comes
back once the transaction is durable (or, for :meth:`LeaseService.lease_early`, once decided,
with a future for durability: 0014). Blocking waits (rule 9), idempotent requestIds (rule 12),
scopes and the dead-man switch (rule 13) and the sweeper's expiries (rule 7) are units too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger.changes import ArmDeadMan, Change, DisarmDeadMan
from ledger.lease import replay, sweeper, waits
from ledger.lease.answers import Position
from ledger.lease.calls import (
    Answer,
    LeaseCall,
    Limits,
    StorageUnavailable,
    Waiter,
    now_ms,
)
from ledger.lease.decider import Decider
from ledger.lease.entries import pseudonyms_of
from ledger.lease.ops import may_wait
from ledger.log.merkle import root_at
from ledger.log.text import b64, iso
from ledger.storage import Storage, StorageError, Transaction
from ledger.writer import blocking
from ledger.writer.committer import GroupCommitter
from ledger.writer.strategy import WriterStrategy, writer_strategy
from ledger.writer.units import unattended


@dataclass
class LeaseService:
    """The lease operations of DESIGN §3.2, decided inside durable storage transactions.

    Build it on an open :class:`~ledger.storage.Storage`, ``await start()`` on the event loop that
    will call it, then :meth:`lease`, :meth:`heartbeat`, :meth:`release_scope` and :meth:`sweep`;
    every answer is returned only once the changes behind it are durable. ``clock`` (ms since the
    epoch) is the only clock it reads. ``ledger/runtime.py`` wires it with everything else.
    """

    storage: Storage
    master_secret: bytes
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], int] = now_ms
    worker: str = "local"
    """This process's name in the ``waiters`` table (``ledger/cluster.py``)."""
    notify: Callable[[str, str], None] | None = None
    """Wakes another worker's waiter after a commit granted it (from the thread that writes)."""
    strategy: WriterStrategy | None = None
    """The writer's speed hooks (``ledger/backends.py``); None: those ``storage`` offers."""
    native_record: bool = True
    """Entries written and hashed by native code where it is built (the same bytes)."""

    def __post_init__(self) -> None:
        self._strategy = writer_strategy(self.storage) if self.strategy is None else self.strategy
        self._base = {"deterministic": True, "limits": self.limits.as_data(), "versions": VERSIONS}
        self._committer: GroupCommitter | None = None
        self._decider: Decider | None = None

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the writer, load the Merkle frontier and record what expired while down; the
        periodic sweep is the runtime's supervised task (``ledger/runtime.py``)."""
        loop = asyncio.get_running_loop()
        self._decider = Decider(
            self.master_secret,
            self.limits,
            self._base,
            loop,
            self.worker,
            self.notify,
            self.native_record,
        )
        self._committer = GroupCommitter(self.storage, loop, self._decider, self._strategy)
        await self.durable(self.committer.submit(self._sweep_work(self.clock())))

    async def stop(self) -> None:
        if self._decider is not None:
            for waiter in list(self._decider.local.values()):
                waiter.future.cancel()
        if self._committer is not None:
            last = self._committer.barrier()
            self._committer.close()
            if last is not None:
                await asyncio.wait([last])

    @property
    def healthy(self) -> bool:
        """Started, and the last commit succeeded."""
        return self._committer is not None and self._committer.failure is None

    @property
    def committer(self) -> GroupCommitter:
        if self._committer is None:
            raise StorageUnavailable("service not started")
        return self._committer

    @property
    def decider(self) -> Decider:
        if self._decider is None:
            raise StorageUnavailable("service not started")
        return self._decider

    async def durable(self, future: asyncio.Future[Any] | None) -> Any:
        """Await a unit of work; a failed commit is :class:`StorageUnavailable` (503 unknown)."""
        if future is None:
            return None
        try:
            return await future
        except StorageError as error:
            raise StorageUnavailable(str(error)) from error

    def position(self) -> Position:
        """Where the ledger stands now, as committed by any process."""
        size = self.storage.tree_size()
        return Position(size, b64(root_at(size, self.storage.node)))

    # -- lease operations -------------------------------------------------------------------

    async def lease(self, call: LeaseCall) -> Answer:
        """Run one lease call; a call that may wait (rule 9) waits for its grant or its time."""
        decider, now = self.decider, self.clock()
        if not may_wait(call):
            work = self.committer.submit(lambda _: decider.lease(call, now, None), self._warm(call))
            return self._cite(await self.durable(work))
        waiter = Waiter(call, asyncio.get_running_loop().create_future())
        decider.local[waiter.waiter_id] = waiter  # before the unit: a grant may come at once
        try:
            prepare = self._warm(call)
            work = self.committer.submit(lambda _: decider.lease(call, now, waiter), prepare)
            answer = await self.durable(work)
            if answer is None:
                answer = await blocking.until_granted(self, waiter)
        finally:
            decider.local.pop(waiter.waiter_id, None)
        return self._cite(answer)

    async def lease_early(self, call: LeaseCall) -> tuple[Answer, asyncio.Future[Any] | None]:
        """:meth:`lease`, answered as soon as the call's batch has been decided — before it is
        durable — with the future that says when it is (docs/decisions/0014). The caller may
        prepare its reply meanwhile but must send nothing before :meth:`durable` of that future
        returns (it raises :class:`StorageUnavailable` if the commit failed: the answer never
        was). A call that waits, or an answer that cites an earlier entry, comes back durable
        (the future None)."""
        if may_wait(call):
            return await self.lease(call), None
        decider, now = self.decider, self.clock()
        early, durable = self.committer.submit_early(
            lambda _: decider.lease(call, now, None), self._warm(call)
        )
        durable.add_done_callback(unattended)  # a batch that failed early fails both: one raises
        answer: Answer = await self.durable(early)
        if answer.cite or answer.data.get("replayed"):
            await self.durable(durable)
            return self._cite(answer), None
        return answer, durable

    async def replays(self, call: LeaseCall) -> bool:
        """Whether ``call`` is a retry of a remembered request with the same input (rule 12):
        answered from storage, it applies nothing."""
        decider = self.decider
        work = self.committer.submit(lambda _: replay.would_replay(decider.batch, call))
        replaying: bool = await self.durable(work)
        return replaying

    def _warm(self, call: LeaseCall) -> Callable[[], None]:
        decider, warm_lease = self.decider, self._strategy.warm_lease

        def prepare() -> None:
            decider.prepare(call)
            warm_lease(call.tenant, call.resource, call.holder, call.scope)

        return prepare

    def _cite(self, answer: Answer) -> Answer:
        """A replayed answer, or a grant another process made for a waiter, carries the
        durable entry it cites and that entry's pseudonyms."""
        if not (answer.cite or answer.data.get("replayed")):
            return answer
        index = answer.data.get("ledger", {}).get("logIndex")
        entry = None if index is None else self.storage.entry(index)
        if entry is not None:
            answer.entry, answer.pseudonyms = entry, pseudonyms_of(json.loads(entry))
        return answer

    # -- waiting (rule 9) -------------------------------------------------------------------

    def wake(self, waiter_id: str) -> None:
        """Another process granted this process's waiter: collect the answer from its row."""
        if self._decider is not None:  # not started (or stopped): nobody waits here
            blocking.collect_woken(self, self._decider, waiter_id)

    def purge_dead_waiters(self, dead: Callable[[list[str]], list[str]]) -> asyncio.Future[None]:
        """The leader's round: drop the waiters of worker processes that died."""
        decider = self.decider
        return self.committer.submit(lambda _: waits.purge(decider.batch, dead))

    # -- scopes (rule 13) -------------------------------------------------------------------

    async def scope_leases(self, tenant: str, scope: str) -> list[dict[str, Any]]:
        """The scope's live leases, after everything queued before this call."""
        decider, now = self.decider, self.clock()
        work = self.committer.submit(
            lambda _: sweeper.scope_leases(decider.batch, tenant, scope, now)
        )
        found: list[dict[str, Any]] = await self.durable(work)
        return found

    async def release_scope(self, tenant: str, scope: str, trigger: str = "request") -> list[int]:
        """End every lease of the scope and disarm its dead-man switch."""
        decider, now = self.decider, self.clock()
        work = self.committer.submit(
            lambda _: sweeper.release_scope(decider.batch, tenant, scope, now, trigger)
        )
        released: list[int] = await self.durable(work)
        return released

    async def heartbeat(
        self, tenant: str, scope: str, dead_seconds: int, renew_seconds: int | None = None
    ) -> dict[str, Any]:
        """Arm (or with 0 disarm) the scope's dead-man switch; every call is a heartbeat. With
        ``renew_seconds``, the same transaction renews every live lease of the scope by that."""
        decider, now = self.decider, self.clock()
        op: Change = DisarmDeadMan(tenant, scope)
        if dead_seconds:
            op = ArmDeadMan(tenant, scope, dead_seconds * 1000, now)
        deadline = iso(now + dead_seconds * 1000) if dead_seconds else None
        beat = {"deadSeconds": dead_seconds, "deadlineAt": deadline, "armed": dead_seconds > 0}
        if renew_seconds is None:
            await self.durable(self.committer.submit([op]))
            return beat

        def work(_: Transaction) -> list[dict[str, Any]]:
            decider.batch.tx.apply(op)
            return sweeper.renew_scope(decider.batch, tenant, scope, now, renew_seconds * 1000)

        return beat | {"renewed": await self.durable(self.committer.submit(work))}

    # -- the sweeper (rule 7, rule 13, rule 12's 24 h) --------------------------------------

    def sweep(self, now: int) -> asyncio.Future[int]:
        """Queue one sweep at ``now``; nobody need await it (a failure marks the service
        unhealthy until a later commit succeeds), but the future says when it is durable, and
        how many due resources it found."""
        future: asyncio.Future[int] = self.committer.submit(self._sweep_work(now))
        future.add_done_callback(unattended)
        return future

    def _sweep_work(self, now: int) -> Callable[[Transaction], int]:
        decider, horizon = self.decider, self.limits.idempotency_seconds * 1000
        return lambda _: sweeper.sweep(decider.batch, now, horizon)


VERSIONS = {
    "engine": "tenure/0.1.0",
    "ledgerSchema": 1,
    "entryFormat": 1,
    "merkle": "RFC 9162 SHA-256",
}
