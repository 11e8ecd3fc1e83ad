"""The lease service: the state machine, its ledger and its clocks, wired together.

All lease state lives in memory, owned by the event loop thread; SQLite is its durable image. A
mutation is decided synchronously against memory (so decisions are serialized without locks),
its statements are queued for group commit, and the caller is answered only once they are durable.
Reads and refusals wait for the commits queued before them, so no answer reflects a state the
disk might not keep. The rules that span resources or time live here: blocking waits served
first-come-first-served (rule 9), idempotent requestIds (rule 12), scopes and the dead-man switch
(rule 13), and the sweeper that records expiries (rule 7).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import heapq
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger import leases
from ledger.answers import Position, lease_view, redact, render
from ledger.calls import (
    Answer,
    LeaseCall,
    Limits,
    StorageUnavailable,
    new_owner_token,
    now_ms,
    owner_digest,
)
from ledger.changes import ArmDeadMan, Change, DisarmDeadMan
from ledger.committer import GroupCommitter
from ledger.deadman import DeadMen
from ledger.entries import iso, pseudonyms_of
from ledger.idempotency import RequestMemory
from ledger.leases import Decision, EventKind, Outcome, Resource
from ledger.ops import ACQUIRING, IDEMPOTENT, Op
from ledger.recorder import Recorder, resource_change
from ledger.scopes import ScopeIndex
from ledger.state import Committed
from ledger.storage import Storage, StorageError
from ledger.waiting import WaitQueues

Key = tuple[str, str]
FREEING = frozenset(
    {EventKind.RELEASE, EventKind.EXPIRE, EventKind.COMPLETE, EventKind.SCOPE_RELEASE}
)


@dataclass
class LeaseService:
    """The lease operations of DESIGN §3.2 over in-memory state with a durable image.

    Build it on an open :class:`~ledger.storage.Storage`, ``await start()`` on the event loop that
    will call it, then :meth:`lease`, :meth:`heartbeat`, :meth:`release_scope` and :meth:`sweep`;
    every answer is returned only once the changes behind it are durable. ``clock`` (ms since the
    epoch) is the only clock it reads. ``ledger/runtime.py`` wires it with everything else.
    """

    storage: Storage
    master_secret: bytes
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], int] = now_ms
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._base = {"deterministic": True, "limits": self.limits.as_data(), "versions": VERSIONS}
        self._waiters = WaitQueues()
        self._committer: GroupCommitter | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._load(self.storage.load_live())

    def _load(self, state: Committed) -> None:
        self.resources: dict[Key, Resource] = state.resources
        self._requests = RequestMemory(state.idempotency)
        self._deadmen = DeadMen(state.scopes)
        self.recorder = Recorder(state.tree, self.master_secret)
        self._expiries: list[tuple[int, str, str]] = []
        self._scopes = ScopeIndex()
        for res in self.resources.values():
            for lease in res.leases:
                self._track(res, lease)
            if res.completion is not None and res.lifecycle_end is not None:
                heapq.heappush(self._expiries, (res.lifecycle_end, res.tenant, res.name))

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the writer and record what expired while the service was down; the periodic
        sweep is the runtime's supervised task (``ledger/runtime.py``)."""
        self._committer = GroupCommitter(self.storage, asyncio.get_running_loop())
        self.sweep(self.clock())

    async def stop(self) -> None:
        self._waiters.cancel_all()
        if self._committer is not None:
            last = self._committer.barrier()
            self._committer.close()
            if last is not None:
                await asyncio.wait([last])

    @property
    def healthy(self) -> bool:
        return self._committer is not None and self._committer.failure is None

    @property
    def committer(self) -> GroupCommitter:
        if self._committer is None:
            raise StorageUnavailable("service not started")
        if self._committer.failure is not None:
            self._start_recovery()
            raise StorageUnavailable(str(self._committer.failure))
        return self._committer

    async def durable(self, future: asyncio.Future[None] | None) -> None:
        if future is None:
            return
        try:
            await future
        except StorageError as error:
            self._start_recovery()
            raise StorageUnavailable(str(error)) from error

    def _submit_unattended(self, ops: list[Change]) -> None:
        """Queue statements nobody awaits (the sweeper's): a failure still starts recovery."""
        future = self.committer.submit(ops)
        future.add_done_callback(self._check_unattended)

    def _check_unattended(self, future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._start_recovery()

    def _start_recovery(self) -> None:
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.create_task(self._recover())

    async def _recover(self) -> None:
        """After a failed commit memory is ahead of the disk: once the writer has refused
        everything queued, reload the durable state and accept writes again."""
        committer = self._committer
        assert committer is not None
        with contextlib.suppress(StorageError):
            await committer.submit([])  # resolves after every batch queued before it
        self._waiters.cancel_all()
        self._load(self.storage.load_live())
        committer.reset()

    # -- lease operations -------------------------------------------------------------------

    async def lease(self, call: LeaseCall) -> Answer:
        committer = self.committer
        digest = _digest_of(call)
        if digest is not None:
            replay = self._replay(call, digest)
            if replay is not None:
                await self.durable(committer.barrier())
                return self._cite_entry(replay)
        key = (call.tenant, call.resource)
        res = self.resources.get(key) or Resource(call.tenant, call.resource)
        now = self.clock()
        decision, token = self._decide(call, res, now)
        if self._should_wait(call, decision):
            return await self._wait(call, res, decision, now)
        answer, pending = self._commit(call, res, decision, now, token, digest)
        await self.durable(pending or committer.barrier())
        return answer

    def _replay(self, call: LeaseCall, digest: bytes) -> Answer | None:
        known = self._requests.get(call.tenant, call.request_id or "")
        if known is None:
            return None
        if known.digest != digest:
            res = self.resources.get((call.tenant, call.resource)) or Resource(
                call.tenant, call.resource
            )
            witness = {"rule": "idempotency", "reason": "requestId reused with other input"}
            decision = Decision(Outcome.IDEMPOTENCY_CONFLICT, witnesses=[witness])
            return Answer(self._render(call, res, decision, self.clock()), decision.outcome)
        return Answer({**known.data, "replayed": True}, known.outcome)

    def _cite_entry(self, replay: Answer) -> Answer:
        """A replayed answer carries the durable entry it cites and that entry's pseudonyms."""
        index = (
            replay.data.get("ledger", {}).get("logIndex") if replay.data.get("replayed") else None
        )
        entry = None if index is None else self.storage.entry(index)
        if entry is not None:
            replay.entry, replay.pseudonyms = entry, pseudonyms_of(json.loads(entry))
        return replay

    def _decide(self, call: LeaseCall, res: Resource, now: int) -> tuple[Decision, str | None]:
        presented = owner_digest(call.owner_token) if call.owner_token else None
        ttl_ms = call.ttl_seconds * 1000
        if call.op in ACQUIRING:
            token = new_owner_token()
            args = leases.AcquireArgs(
                holder=call.holder or "",
                ttl_ms=ttl_ms,
                lifecycle_ms=self.limits.lifecycle_seconds * 1000,
                owner_digest=owner_digest(token),
                presented_owner=presented,
                fencing_token=call.fencing_token,
                capacity=call.capacity,
                fingerprint=self._fingerprint(call),
                scope=call.scope,
            )
            decision = leases.acquire(res, args, now)
            return decision, token if decision.outcome is Outcome.GRANTED else None
        if call.op == Op.GET:
            return leases.get(res, now), None
        assert presented is not None, "the edge requires ownerToken for this op"
        if call.op == Op.RENEW:
            return leases.renew(res, presented, call.fencing_token, ttl_ms, now), None
        if call.op == Op.RELEASE:
            return leases.release(res, presented, call.fencing_token, now), None
        if call.op == Op.COMPLETE:
            result = redact(call.result)
            return leases.complete(res, presented, call.fencing_token, result, now), None
        raise ValueError(f"unknown op {call.op!r}")

    def _fingerprint(self, call: LeaseCall) -> bytes | None:
        if call.fingerprint is None:
            return None
        return hashlib.sha256(call.fingerprint.encode()).digest()

    def _should_wait(self, call: LeaseCall, decision: Decision) -> bool:
        waits = call.op == Op.WAIT or call.wait_seconds is not None
        return waits and decision.outcome is Outcome.HELD and not decision.same_holder_label

    def _commit(
        self,
        call: LeaseCall,
        res: Resource,
        decision: Decision,
        now: int,
        token: str | None,
        digest: bytes | None,
    ) -> tuple[Answer, asyncio.Future[None] | None]:
        """Record the decision's events, render the answer, queue the statements."""
        ops, position, entry, names = self._record(res, decision)
        data = self._render(call, res, decision, now, position)
        answer = Answer(data, decision.outcome, token is not None, entry, names)
        if digest is not None and decision.changed:
            ops.append(
                self._requests.remember(call.tenant, call.request_id or "", digest, data, now)
            )
        if token is not None:
            answer.data = {**data, "ownerToken": token}
        pending = self.committer.submit(ops) if ops else None
        if any(event.kind in FREEING for event in decision.events):
            self._serve_waiters((res.tenant, res.name))
        return answer, pending

    def _render(
        self,
        call: LeaseCall,
        res: Resource,
        decision: Decision,
        now: int,
        position: Position | None = None,
    ) -> dict[str, Any]:
        data = render(call.op, res, decision, now, self._base, self.rng.random())
        data["ledger"] = (position or self.position()).as_data()
        return data

    def position(self) -> Position:
        return self.recorder.position()

    def waiting(self) -> int:
        """Callers queued for a lease now (``op: wait`` or ``waitSeconds``)."""
        return self._waiters.count()

    # -- recording --------------------------------------------------------------------------

    def _record(
        self, res: Resource, decision: Decision
    ) -> tuple[list[Change], Position | None, bytes | None, dict[str, str] | None]:
        """Append the decision's events to the ledger; the statements that make them durable."""
        if not decision.events:
            return [], None, None, None
        self.resources[(res.tenant, res.name)] = res
        recorded = self.recorder.record(res, decision)
        for event in decision.events:
            self._track(res, event.lease, event.kind)
        if res.completion is not None and res.lifecycle_end is not None:  # purge it then
            heapq.heappush(self._expiries, (res.lifecycle_end, res.tenant, res.name))
        return recorded.ops, recorded.position, recorded.entry, recorded.names

    def _track(
        self, res: Resource, lease: leases.Lease, kind: EventKind = EventKind.ACQUIRE
    ) -> None:
        """Keep the expiry heap and the scope index in step with the leases."""
        live = kind in (EventKind.ACQUIRE, EventKind.RENEW)
        if live:
            heapq.heappush(self._expiries, (lease.expires_at, res.tenant, res.name))
        self._scopes.track(res, lease, live)

    # -- waiting (rule 9) -------------------------------------------------------------------

    async def _wait(self, call: LeaseCall, res: Resource, refusal: Decision, now: int) -> Answer:
        key = (call.tenant, call.resource)
        waiter = self._waiters.join(key, call)
        seconds = min(call.wait_seconds or 30, self.limits.wait_max_seconds)
        try:
            answer, pending = await asyncio.wait_for(asyncio.shield(waiter.future), seconds)
        except asyncio.CancelledError:
            self._waiters.leave(key, waiter)  # the caller is gone: grant it no slot later
            if waiter.future.cancelled() and not _cancelling():
                # Storage recovery (or shutdown) dropped the queue, not the caller: 503 unknown.
                raise StorageUnavailable("the wait ended while storage recovered") from None
            raise
        except TimeoutError:
            self._waiters.leave(key, waiter)
            if not waiter.future.done():
                return await self._timed_out(call, key)
            answer, pending = waiter.future.result()
        await self.durable(pending)
        return answer

    async def _timed_out(self, call: LeaseCall, key: Key) -> Answer:
        """The wait is over: one last plain attempt, which refuses like rule 8 if still held."""
        res = self.resources.get(key) or Resource(*key)
        now = self.clock()
        decision, token = self._decide(call, res, now)
        if decision.outcome is Outcome.HELD:
            decision.witnesses.append({"rule": "wait", "reason": "timed out"})
        answer, pending = self._commit(call, res, decision, now, token, _digest_of(call))
        await self.durable(pending or self.committer.barrier())
        return answer

    def _serve_waiters(self, key: Key) -> None:
        """Grant freed slots to waiters in arrival order; stop at the first one still held."""
        while (waiter := self._waiters.head(key)) is not None:
            res = self.resources.get(key) or Resource(*key)
            now = self.clock()
            decision, token = self._decide(waiter.call, res, now)
            if decision.outcome is Outcome.HELD and not decision.same_holder_label:
                return
            self._waiters.leave(key, waiter)
            digest = _digest_of(waiter.call)  # a retry of this request must get the replay
            result = self._commit(waiter.call, res, decision, now, token, digest)
            if not waiter.future.done():
                waiter.future.set_result(result)

    # -- scopes (rule 13) -------------------------------------------------------------------

    def scope_leases(self, tenant: str, scope: str) -> list[dict[str, Any]]:
        now = self.clock()
        found = []
        for name in self._scopes.names(tenant, scope):
            res = self.resources[(tenant, name)]
            for lease in res.leases:
                if lease.scope == scope and lease.expires_at > now:
                    found.append({"resource": name, "leaseId": lease.lease_id} | lease_view(lease))
        return found

    async def release_scope(self, tenant: str, scope: str, trigger: str = "request") -> list[int]:
        released, pending = self._release_scope(tenant, scope, self.clock(), trigger)
        await self.durable(pending or self.committer.barrier())
        return released

    def _release_scope(
        self, tenant: str, scope: str, now: int, trigger: str
    ) -> tuple[list[int], asyncio.Future[None] | None]:
        released: list[int] = []
        ops: list[Change] = []
        for name in self._scopes.take(tenant, scope):
            res = self.resources[(tenant, name)]
            events = leases.expire(res, now)
            for lease in [lease for lease in res.leases if lease.scope == scope]:
                events.append(leases.end_lease(res, lease, EventKind.SCOPE_RELEASE, now, trigger))
                released.append(lease.lease_id)
            ops.extend(self._record(res, Decision(Outcome.RELEASED, events))[0])
        self._deadmen.disarm((tenant, scope))
        ops.append(DisarmDeadMan(tenant, scope))
        pending = self.committer.submit(ops)
        pending.add_done_callback(self._check_unattended)
        for name in self._waiters.resources_of(tenant):
            self._serve_waiters((tenant, name))
        return released, pending

    async def heartbeat(self, tenant: str, scope: str, dead_seconds: int) -> dict[str, Any]:
        """Arm (or with 0 disarm) the scope's dead-man switch; every call is a heartbeat."""
        now = self.clock()
        key = (tenant, scope)
        if dead_seconds == 0:
            self._deadmen.disarm(key)
            op: Change = DisarmDeadMan(*key)
        else:
            self._deadmen.arm(key, dead_seconds * 1000, now)
            op = ArmDeadMan(*key, dead_seconds * 1000, now)
        await self.durable(self.committer.submit([op]))
        deadline = iso(now + dead_seconds * 1000) if dead_seconds else None
        return {"deadSeconds": dead_seconds, "deadlineAt": deadline, "armed": dead_seconds > 0}

    # -- the sweeper (rule 7, rule 13, rule 12's 24 h) --------------------------------------

    def sweep(self, now: int) -> None:
        while self._expiries and self._expiries[0][0] <= now:
            _, tenant, name = heapq.heappop(self._expiries)
            res = self.resources.get((tenant, name))
            if res is None:
                continue
            completed = res.completion is not None
            decision = Decision(Outcome.RELEASED, leases.expire(res, now))
            ops = self._record(res, decision)[0]
            if completed and res.completion is None and not ops:  # its lifecycle ended
                ops = [resource_change(res)]
            if ops:
                self._submit_unattended(ops)
                self._serve_waiters((tenant, name))
        for key in self._deadmen.due(now):
            self._release_scope(*key, now, "deadman")
        self._forget_requests(now)

    def _forget_requests(self, now: int) -> None:
        change = self._requests.forget_before(now - self.limits.idempotency_seconds * 1000)
        if change is not None:
            self._submit_unattended([change])


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _digest_of(call: LeaseCall) -> bytes | None:
    """Rule 12 applies to calls with a requestId that can change state."""
    return call.digest() if call.request_id and call.op in IDEMPOTENT else None


VERSIONS = {
    "engine": "tenure/0.1.0",
    "ledgerSchema": 1,
    "entryFormat": 1,
    "merkle": "RFC 9162 SHA-256",
}
