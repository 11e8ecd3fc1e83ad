"""Deciding inside the write transaction (docs/decisions/0006): the writer's half
(the event loop on lent turns, docs/decisions/0017, or the committer's writer thread).

Every lease call is a unit of work the group committer runs in its transaction: it reads the
resource with its leases (``tx.resource``) and the idempotency record (``tx.request``), decides
with the pure machine (``ledger/leases.py``), records the entry and Merkle nodes (``Recorder``),
applies the changes and renders the answer's data. Nothing here is authoritative between
transactions: a per-transaction cache lets several calls on one resource in one batch see each
other, and the Merkle frontier is checked against ``tx.tree_size()`` when each transaction opens
(reloaded from ``tx.node`` if it does not match, e.g. after a failed commit or another writer).
Waiters (rule 9) queue in the storage's ``waiters`` table, so a slot freed by any process goes to
the first waiter of any process; memory holds only this process's live waiters' futures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from ledger import leases, waits
from ledger.answers import Position, redact, render
from ledger.calls import (
    REQUEST_LABEL,
    WAITER_LABEL,
    Answer,
    LeaseCall,
    Limits,
    StorageUnavailable,
    derived_owner_token,
    new_owner_token,
    owner_digest,
)
from ledger.changes import RememberRequest
from ledger.entries import b64, entry_time
from ledger.leases import Decision, EventKind, Outcome, Resource
from ledger.merkle import CompactRange
from ledger.names import FINGERPRINT, REQUEST_INPUT
from ledger.ops import ACQUIRING, Op, digest_of
from ledger.recorder import Recorder
from ledger.replay import replayed
from ledger.storage import Transaction
from ledger.waiting import Waiter
from verify.rfc9162 import EMPTY_ROOT

Key = tuple[str, str]
FREEING = frozenset(
    {
        EventKind.RELEASE,
        EventKind.EXPIRE,
        EventKind.COMPLETE,
        EventKind.SCOPE_RELEASE,
        EventKind.REVOKE,
    }
)


class Decider:
    """The writer's state: the recorder, the batch's resource cache, the local waiters.

    Implements :class:`~ledger.committer.BatchHooks`; every other method runs inside a unit of
    work, on the thread that writes, within the transaction ``begin`` opened.
    """

    def __init__(
        self,
        master_secret: bytes,
        limits: Limits,
        base: dict[str, Any],
        loop: asyncio.AbstractEventLoop,
        worker: str = "local",
        notify: Callable[[str, str], None] | None = None,
    ) -> None:
        self.recorder = Recorder(CompactRange(), master_secret)
        self._tree_known = False
        self._master = master_secret
        self.limits = limits
        self._base = base
        self._loop = loop
        self._rng = random.Random()
        self.worker = worker
        self._notify = notify
        self.local: dict[str, Waiter] = {}
        """This process's waiters by id: the loop adds one before its call is queued."""
        self._tx: Transaction | None = None
        self._cache: dict[Key, Resource] = {}
        self._upcoming: list[Key] = []
        self._minted: dict[int, str] = {}
        """Fresh owner tokens made by ``prepare``, by the id of the call they are for."""
        """The resources the next batch's calls name (``prepare``): read together at ``begin``."""
        self.served: list[tuple[str, str]] = []
        self.serving: set[Key] = set()
        self.published = Position(0, b64(EMPTY_ROOT))
        """The position after the last commit, for readers on the event loop."""
        self.floor = 0
        """The latest entry time (ms) this writer knows the log holds, its own or another
        writer's: no decision is taken before it, so times never go backwards (DESIGN §6)."""

    # -- the committer's hooks ---------------------------------------------------------------

    def begin(self, tx: Transaction) -> None:
        self._tx, self._cache, self.served = tx, {}, []
        size = tx.tree_size()
        if not self._tree_known or self.recorder.tree.size != size:
            self.recorder.tree = CompactRange.load(size, tx.node)
            self._tree_known = True
            last = tx.entry(size - 1) if size else None  # another writer's, perhaps
            self.floor = max(self.floor, 0 if last is None else entry_time(last))
        upcoming, self._upcoming = self._upcoming, []
        if upcoming:
            found = tx.resources(upcoming)
            for key in upcoming:
                self._cache[key] = found.get(key) or Resource(*key)

    def committed(self) -> None:
        self.published = self.recorder.position()
        self._minted.clear()
        served, self.served, self._tx, self._cache = self.served, [], None, {}
        for worker, waiter_id in served:
            waiter = self.local.get(waiter_id) if worker == self.worker else None
            if waiter is not None:
                self._loop.call_soon_threadsafe(_grant, waiter)
            elif self._notify is not None:
                self._notify(worker, waiter_id)

    def failed(self, error: BaseException) -> None:
        """Nothing of the batch is on disk: forget the frontier and fail this process's waiters
        (their rows, if any survive, are dropped when next met: nobody here collects them)."""
        self._tree_known = False
        self.served, self._tx, self._cache, self._upcoming = [], None, {}, []
        self._minted.clear()
        failure = StorageUnavailable(f"the ledger could not be written: {error}")
        for waiter in list(self.local.values()):
            waiter.granted = None
            self._loop.call_soon_threadsafe(_fail, waiter, failure)

    # -- units of work -----------------------------------------------------------------------

    @property
    def tx(self) -> Transaction:
        assert self._tx is not None, "a unit of work runs inside the committer's transaction"
        return self._tx

    def resource(self, tenant: str, name: str) -> Resource:
        """The resource as this transaction sees it, shared by every call of the batch."""
        key = (tenant, name)
        res = self._cache.get(key)
        if res is None:
            res = self.tx.resource(tenant, name) or Resource(tenant, name)
            self._cache[key] = res
        return res

    def lease(self, call: LeaseCall, now: int, waiter: Waiter | None) -> Answer | None:
        """Decide one call; ``None`` if it joined the wait queue (``waiter`` given, held)."""
        now = self.at(now)
        digest = self.request_digest(call)
        if digest is not None:
            replay = replayed(self, call, digest, now)
            if replay is not None:
                return replay
        res = self.resource(call.tenant, call.resource)
        token = self.owner_token(call, None if waiter is None else waiter.waiter_id)
        decision = self.decide(call, res, now, token)
        if waiter is not None and waits.should_wait(call, decision):
            self.record(res, decision)  # expiries found on the way are recorded all the same
            waits.join(self, call, waiter, digest)
            return None
        return self.commit(call, res, decision, now, token, digest)

    def prepare(self, call: LeaseCall) -> None:
        """Before the transaction: derive the pseudonyms recording ``call`` will name (the
        recorder remembers them) and note its resource, which ``begin`` reads with the rest of
        the batch's — less to do while the ledger's lock is held (issue 10)."""
        self._upcoming.append((call.tenant, call.resource))
        if call.op in ACQUIRING and not call.request_id:
            self._minted[id(call)] = new_owner_token()  # used unless the call waits
        names = self.recorder.pseudonyms(call.tenant)
        names.resource(call.resource)
        if call.holder is not None:
            names.holder(call.holder)
        if call.scope is not None:
            names.scope(call.scope)

    # -- deciding ----------------------------------------------------------------------------

    def request_digest(self, call: LeaseCall) -> bytes | None:
        """Rule 12's digest of the call's input, keyed under the names key (0010)."""
        raw = digest_of(call)
        return None if raw is None else self.tx.keyed(REQUEST_INPUT, call.tenant, raw)

    def fingerprint(self, call: LeaseCall) -> bytes | None:
        """The call's fingerprint as the resource row keeps it: keyed, like the digest."""
        if call.fingerprint is None:
            return None
        raw = hashlib.sha256(call.fingerprint.encode()).digest()
        return self.tx.keyed(FINGERPRINT, call.tenant, raw)

    def owner_token(self, call: LeaseCall, waiter_id: str | None) -> str | None:
        """The token a grant would carry: derived from the requestId (so a replay can return
        it) or the waiter id (so the waiting process can), else 256 fresh random bits."""
        if call.op not in ACQUIRING:
            return None
        if call.request_id:
            return derived_owner_token(self._master, REQUEST_LABEL, call.tenant, call.request_id)
        if waiter_id is not None:
            return derived_owner_token(self._master, WAITER_LABEL, waiter_id)
        return self._minted.pop(id(call), None) or new_owner_token()

    def at(self, now: int) -> int:
        """The time a decision is taken at: ``now``, unless the log already holds a later
        entry (a writer whose clock is ahead, a clock stepped back), then that entry's time."""
        return now if now >= self.floor else self.floor

    def decide(self, call: LeaseCall, res: Resource, now: int, token: str | None) -> Decision:
        now = self.at(now)
        presented = owner_digest(call.owner_token) if call.owner_token else None
        ttl_ms = call.ttl_seconds * 1000
        if call.op in ACQUIRING:
            assert token is not None
            args = leases.AcquireArgs(
                holder=call.holder or "",
                ttl_ms=ttl_ms,
                lifecycle_ms=self.limits.lifecycle_seconds * 1000,
                owner_digest=owner_digest(token),
                presented_owner=presented,
                fencing_token=call.fencing_token,
                capacity=call.capacity,
                fingerprint=self.fingerprint(call),
                scope=call.scope,
            )
            return leases.acquire(res, args, now)
        if call.op == Op.GET:
            return leases.get(res, now)
        assert presented is not None, "the edge requires ownerToken for this op"
        if call.op == Op.RENEW:
            return leases.renew(res, presented, call.fencing_token, ttl_ms, now)
        if call.op == Op.RELEASE:
            return leases.release(res, presented, call.fencing_token, now)
        if call.op == Op.COMPLETE:
            result = redact(call.result)
            return leases.complete(res, presented, call.fencing_token, result, now)
        raise ValueError(f"unknown op {call.op!r}")

    def commit(
        self,
        call: LeaseCall,
        res: Resource,
        decision: Decision,
        now: int,
        token: str | None,
        digest: bytes | None,
    ) -> Answer:
        """Record the decision's events, render the answer, remember it (rule 12), and serve
        the resource's waiters if a slot freed."""
        position, entry, names = self.record(res, decision)
        data = self.render(call, res, decision, now, position)
        granted = decision.outcome is Outcome.GRANTED
        answer = Answer(data, decision.outcome, granted, entry, names)
        if digest is not None and decision.changed:
            remembered = RememberRequest(
                call.tenant, call.request_id or "", digest, _json(data), now
            )
            self.tx.apply(remembered)
        if granted and token is not None:
            data["ownerToken"] = token  # last, as the answer has always put it; after remembering
        return answer

    def record(
        self, res: Resource, decision: Decision
    ) -> tuple[Position | None, bytes | None, dict[str, str] | None]:
        """Append the decision's events to the ledger and apply the changes; serve waiters."""
        if not decision.events:
            return None, None, None
        recorded = self.recorder.record(res, decision)
        self.floor = max(self.floor, max(event.time for event in decision.events))
        apply = self.tx.apply
        for change in recorded.ops:
            apply(change)
        for event in decision.events:
            if event.kind in FREEING:
                waits.serve(self, (res.tenant, res.name), decision.events[-1].time)
                break
        return recorded.position, recorded.entry, recorded.names

    def render(
        self,
        call: LeaseCall,
        res: Resource,
        decision: Decision,
        now: int,
        position: Position | None = None,
    ) -> dict[str, Any]:
        data = render(call.op, res, decision, now, self._base, self._rng.random())
        data["ledger"] = (position or self.recorder.position()).as_data()
        return data


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data)


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
