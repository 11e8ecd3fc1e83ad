"""One write transaction of the lease model (docs/decisions/0006, 0024).

A :class:`Batch` lives from the transaction's start to its end: the open transaction, the
resources its calls read (shared, so calls on one resource see each other), the waiters it
served and the owner tokens drawn for its calls. It decides with the pure machine
(``ledger/lease/leases.py``), records with the writer's recorder and renders the answer's data.
Waits (``ledger/lease/waits.py``) and replay (``ledger/lease/replay.py``) are functions of a
Batch; the :class:`~ledger.lease.decider.Decider` makes one per transaction and keeps what
outlives it.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ledger.changes import RememberRequest
from ledger.keys.names import FINGERPRINT
from ledger.lease import leases
from ledger.lease.answers import Position, redact, render
from ledger.lease.calls import (
    REQUEST_LABEL,
    WAITER_LABEL,
    Answer,
    LeaseCall,
    Limits,
    Waiter,
    derived_owner_token,
    new_owner_token,
    owner_digest,
)
from ledger.lease.leases import Decision, EventKind, Outcome, Resource
from ledger.lease.ops import ACQUIRING, Op
from ledger.lease.recorder import Recorded, Recorder, resource_change
from ledger.lease.tokens import default_holder
from ledger.storage import Transaction

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


@dataclass(frozen=True, slots=True)
class Shared:
    """What every batch of one decider shares: made once, with the decider."""

    master: bytes
    limits: Limits
    base: dict[str, Any]
    """What every answer repeats (versions, limits)."""
    recorder: Recorder
    worker: str
    local: dict[str, Waiter]
    """This process's live waiters by id."""
    serve_waiters: Callable[[Batch, Key, int], None]
    """Rule 9: hands a freed slot on (``ledger/lease/waits.serve``)."""
    rng: random.Random


class Batch:
    """One transaction's view; every method runs on the thread that writes, inside ``tx``."""

    __slots__ = (
        *("tx", "recorder", "limits", "worker", "local", "floor", "served", "serving", "freed"),
        "token_floor",
        *("_cache", "_rows", "_fresh", "_master", "_base", "_serve_waiters", "_rng"),
    )

    def __init__(
        self,
        tx: Transaction,
        shared: Shared,
        fresh: list[str],
        floor: int,
        token_floor: int = 0,
    ) -> None:
        """``fresh``: owner tokens drawn before the lock was taken, one per call that may need
        one; ``floor``: the latest entry time (ms) the log holds, before which nothing is
        decided (DESIGN §6); ``token_floor``: the ledger's fencing floor, above which every
        grant's token is (rule 2)."""
        self.tx, self._fresh, self.floor = tx, fresh, floor
        self._cache: dict[Key, Resource] = {}
        """The resources read, shared by every call of the batch (calls on one resource see
        each other)."""
        self.token_floor = token_floor
        self.recorder, self.limits, self.worker = shared.recorder, shared.limits, shared.worker
        self.local, self._master, self._base = shared.local, shared.master, shared.base
        self._serve_waiters, self._rng = shared.serve_waiters, shared.rng
        self.served: list[tuple[str, str]] = []
        """The waiters granted or refused here, by worker: woken after the commit."""
        self.serving: set[Key] = set()
        self._rows: dict[Key, tuple[object, ...]] = {}
        """Each resource's row as storage holds it (:func:`_row_of`), where it has one."""
        self.freed: dict[Key, int] | None = None
        """While a sweep records, the resources it freed and when: served after, not each
        between two expiries, so the held-back rows are written together."""

    def resource(self, tenant: str, name: str) -> Resource:
        """The resource as this transaction sees it, shared by every call of the batch."""
        key = (tenant, name)
        res = self._cache.get(key)
        if res is None:
            found = self.tx.resource(tenant, name)
            if found is None:
                res = self._cache[key] = Resource(tenant, name)
            else:
                self.adopt({key: found})
                res = found
        return res

    def read_ahead(self, keys: Iterable[Key]) -> None:
        """Read the resources of ``keys`` this batch has not yet seen, in one storage call."""
        wanted = [key for key in dict.fromkeys(keys) if key not in self._cache]
        if wanted:
            found = self.tx.resources(wanted)
            self.adopt(found)
            for key in wanted:
                if key not in found:
                    self._cache[key] = Resource(*key)

    def adopt(self, found: dict[Key, Resource]) -> None:
        """Resources read from storage: those the batch has not seen yet are shared by its calls
        from now on, their rows noted as stored (a decision that leaves a row as it was does not
        write it again); one it has seen stays as the batch's calls left it."""
        cache, rows = self._cache, self._rows
        for key, res in found.items():
            if key not in cache:
                cache[key] = res
                rows[key] = _row_of(res)

    def at(self, now: int) -> int:
        """The time a decision is taken at: ``now``, unless the log already holds a later
        entry (a writer whose clock is ahead, a clock stepped back), then that entry's time."""
        return now if now >= self.floor else self.floor

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
        return self._fresh.pop() if self._fresh else new_owner_token()

    def decide(self, call: LeaseCall, res: Resource, now: int, token: str | None) -> Decision:
        """The pure machine's decision on ``call`` (``token``: the one a grant would carry)."""
        now = self.at(now)
        presented = owner_digest(call.owner_token) if call.owner_token else None
        ttl_ms = call.ttl_seconds * 1000
        if call.op in ACQUIRING:
            assert token is not None
            args = leases.AcquireArgs(
                holder=call.holder or default_holder(token),
                ttl_ms=ttl_ms,
                lifecycle_ms=self.limits.lifecycle_seconds * 1000,
                owner_digest=owner_digest(token),
                presented_owner=presented,
                fencing_token=call.fencing_token,
                capacity=call.capacity,
                fingerprint=self.fingerprint(call),
                scope=call.scope,
                token_floor=self.token_floor,
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
        recorded = self._record(res, decision, True)
        position, entry, names = recorded.position, recorded.entry, recorded.names
        data = self.render(call, res, decision, now, position)
        granted = decision.outcome is Outcome.GRANTED
        if digest is not None and decision.changed:
            remembered = RememberRequest(
                call.tenant, call.request_id or "", digest, json.dumps(data), now
            )
            self.tx.apply(remembered)
        return Answer(data, decision.outcome, granted, entry, names, token if granted else None)

    def record(self, res: Resource, decision: Decision) -> None:
        """Append the decision's events to the ledger and apply the changes; serve waiters.
        Nobody answers with the position, so the tree's root is not computed."""
        self._record(res, decision, False)

    def _record(self, res: Resource, decision: Decision, positioned: bool) -> Recorded:
        if not decision.events:
            return Recorded([])
        recorded = self.recorder.record(res, decision, positioned)
        self.floor = max(self.floor, max(event.time for event in decision.events))
        apply = self.tx.apply
        for change in recorded.ops:
            apply(change)
        key = (res.tenant, res.name)
        self.put_row(res)
        for event in decision.events:
            if event.kind in FREEING:
                self.free(key, decision.events[-1].time)
                break
        return recorded

    def put_row(self, res: Resource) -> None:
        """Write the resource's row unless storage holds it as it stands (an expiry, a renew,
        a release leave it as it was)."""
        key, row = (res.tenant, res.name), _row_of(res)
        if self._rows.get(key) != row:
            self.tx.apply(resource_change(res))
            self._rows[key] = row

    def free(self, key: Key, now: int) -> None:
        """A slot of ``key`` freed at ``now``: serve its waiters, or note it while a sweep
        holds them (rule 9 holds either way: they are served in this transaction)."""
        if self.freed is None:
            self._serve_waiters(self, key, now)
        else:
            self.freed[key] = now

    def render(
        self,
        call: LeaseCall,
        res: Resource,
        decision: Decision,
        now: int,
        position: Position | None = None,
    ) -> dict[str, Any]:
        """The answer's data, with the ledger position it was decided at."""
        data = render(call.op, res, decision, now, self._base, self._rng.random())
        data["ledger"] = (position or self.recorder.position()).as_data()
        return data


def _row_of(res: Resource) -> tuple[object, ...]:
    """What a resource's row of storage holds (:func:`~ledger.lease.recorder.resource_change`
    writes these fields): equal, the row need not be written."""
    return (res.capacity, res.max_token, res.lifecycle_end, res.fingerprint, res.completion)
