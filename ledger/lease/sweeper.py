"""Units of work that span resources (docs/decisions/0006): scopes and the dead-man switch
(rule 13), and the sweeper (rule 7, rule 13, rule 12's 24 h).

Each runs inside the committer's transaction, a function of its :class:`~ledger.lease.batch.Batch`,
finds what it needs through the storage's indexes — leases by ``expires_at``, dead-man switches
by deadline, scope members by scope, idempotency records by ``created_at`` — so nothing in memory
grows with the resources or entries ever seen.
"""

from __future__ import annotations

import time
from typing import Any

from ledger import metrics
from ledger.changes import DisarmDeadMan, ForgetRequests
from ledger.lease import leases
from ledger.lease.answers import lease_view
from ledger.lease.batch import Batch, Key
from ledger.lease.leases import Decision, EventKind, Outcome, Resource

SWEEP_BATCH = 1000
"""At most this many due resources (and as many due switches) per sweep, so one transaction
stays short; the next round takes the rest."""
SWEEP_SHARE = 64
"""The expiries a sweep aims to carry when they come fast: each holds the ledger's lock for its
group, so a tick's worth of them in one group is one long wait for every call behind it."""


def next_sweep_in(found: int, seconds: float, interval: float) -> float:
    """Seconds until the next sweep, after one that found ``found`` due resources ``seconds``
    after the one before: ``interval`` while they are few, sooner while they come faster
    than :data:`SWEEP_SHARE` per ``interval`` (so a sweep carries about that many), and never
    sooner than a tenth of ``interval``. Pure: the runtime passes its own clock's figures."""
    if found <= SWEEP_SHARE or seconds <= 0:
        return interval
    return max(interval / 10, min(interval, SWEEP_SHARE * seconds / found))


def scope_leases(batch: Batch, tenant: str, scope: str, now: int) -> list[dict[str, Any]]:
    """The scope's live leases (the resume packet), as the transaction sees them."""
    found = []
    for name in batch.tx.scope_resources(tenant, scope):
        res = batch.resource(tenant, name)
        for lease in res.leases:
            if lease.scope == scope and lease.expires_at > now:
                found.append({"resource": name, "leaseId": lease.lease_id} | lease_view(lease))
    return found


def release_scope(batch: Batch, tenant: str, scope: str, now: int, trigger: str) -> list[int]:
    """End every lease of the scope (scope release or dead man), disarm its switch."""
    now = batch.at(now)
    released: list[int] = []
    for name in batch.tx.scope_resources(tenant, scope):
        res = batch.resource(tenant, name)
        events = leases.expire(res, now)
        for lease in [lease for lease in res.leases if lease.scope == scope]:
            events.append(leases.end_lease(res, lease, EventKind.SCOPE_RELEASE, now, trigger))
            released.append(lease.lease_id)
        batch.record(res, Decision(Outcome.RELEASED, events))
    batch.tx.apply(DisarmDeadMan(tenant, scope))
    return released


def renew_scope(
    batch: Batch, tenant: str, scope: str, now: int, ttl_ms: int
) -> list[dict[str, Any]]:
    """Renew every live lease of the scope by ``ttl_ms`` (rule 5, one renew entry each): the
    scope's heartbeat with ``renew``, which its owner sends instead of each owner token."""
    now = batch.at(now)
    renewed: list[dict[str, Any]] = []
    for name in batch.tx.scope_resources(tenant, scope):
        res = batch.resource(tenant, name)
        events = leases.expire(res, now)
        for lease in [lease for lease in res.leases if lease.scope == scope]:
            token = lease.fencing_token
            events += leases.renew(res, lease.owner_digest, token, ttl_ms, now).events
            renewed.append({"resource": name, "leaseId": lease.lease_id} | lease_view(lease))
        batch.record(res, Decision(Outcome.RENEWED, events))
    return renewed


def sweep(batch: Batch, now: int, idempotency_ms: int) -> int:
    """Record what expired, fire the dead-man switches that are due, forget old requests; the
    number of due resources it found. The time it took goes to ``tenure_sweep_seconds`` (its
    share of the ledger's lock). The rows held back are written at both ends, so the figure has
    the sweep's rows and no one else's."""
    batch.tx.flush()  # the sweep's first read would write them anyway
    started = time.perf_counter()
    try:
        found = _sweep(batch, now, idempotency_ms)
        batch.tx.flush()
    finally:
        metrics.swept(time.perf_counter() - started)
    return found


def expire_due(batch: Batch, due: dict[Key, Resource], now: int) -> None:
    """Record the expiries of the resources ``due`` (read together): one by one, then their
    waiters served, so every expiry's rows go to storage in one write, not one each; when no
    process has a waiter queued, one read says so for them all."""
    batch.adopt(due)
    freed: dict[Key, int] = {}
    batch.freed = freed
    try:
        for key in due:
            res = batch.resource(*key)
            batch.record(res, Decision(Outcome.RELEASED, leases.expire(res, now)))
    finally:
        batch.freed = None
    if freed and batch.tx.waiter_workers():  # else nobody waits anywhere: one read, not each
        for key, at in freed.items():
            batch.free(key, at)


def _sweep(batch: Batch, now: int, idempotency_ms: int) -> int:
    now = batch.at(now)
    tx = batch.tx
    due = tx.expired(now, SWEEP_BATCH)
    expire_due(batch, due, now)
    for tenant, scope in tx.due_scopes(now, SWEEP_BATCH):
        release_scope(batch, tenant, scope, now, "deadman")
    for tenant, name in tx.ended_lifecycles(now, SWEEP_BATCH):
        res = batch.resource(tenant, name)
        events = leases.expire(res, now)  # no lease outlives its lifecycle: none to record
        batch.record(res, Decision(Outcome.RELEASED, events))
        batch.put_row(res)  # fingerprint and result purged: none outlives it
    tx.apply(ForgetRequests(now - idempotency_ms))
    return len(due)
