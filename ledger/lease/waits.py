"""Rule 9 across processes (docs/decisions/0006): the ``waiters`` rows, as functions of a Batch.

A call that may wait and is refused ``HELD`` joins (:func:`join`) in the transaction that refused
it; every transaction that frees a slot serves (:func:`serve`) the resource's rows in the order
they queued, whichever process holds them, stopping at the first still held. A grant for this
process's :class:`~ledger.lease.calls.Waiter` is handed to it after the commit; for another process
the row keeps the answer's data (never the owner token: the waiter derives it, 0007) until that
process collects it (:func:`collect`), woken by the granting process or by its own deadline.
A waiter whose API key was revoked meanwhile is refused instead, wherever it would be served or
collected: its row goes, nothing is recorded, and its caller is answered 401.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ledger.changes import AddWaiter, DropWaiter, DropWorkerWaiters, GrantWaiter
from ledger.lease.batch import Batch, Key
from ledger.lease.calls import Answer, KeyRevoked, LeaseCall, Waiter
from ledger.lease.leases import Decision, Outcome
from ledger.lease.ops import Op
from ledger.lease.replay import request_digest
from ledger.storage import WaiterRecord


def join(batch: Batch, call: LeaseCall, waiter: Waiter, digest: bytes | None) -> None:
    """Queue ``waiter`` behind every earlier waiter of its resource."""
    stored = _stored_call(call, digest)
    batch.tx.apply(AddWaiter(waiter.waiter_id, call.tenant, call.resource, batch.worker, stored))


def serve(batch: Batch, key: Key, now: int) -> None:
    """Grant freed slots to the resource's waiters in the order they queued, whichever process
    holds them; stop at the first one still held (rule 9)."""
    if key in batch.serving:
        return  # a grant below recorded expiries: the loop below goes on serving
    batch.serving.add(key)
    try:
        for row in batch.tx.waiters(*key):
            if not _serve(batch, key, row, now):
                return
    finally:
        batch.serving.discard(key)


def _serve(batch: Batch, key: Key, row: WaiterRecord, now: int) -> bool:
    """Grant one waiter if a slot is free; whether to go on to the next."""
    local = batch.local.get(row.waiter_id) if row.worker == batch.worker else None
    if row.worker == batch.worker and (local is None or local.abandoned):
        batch.tx.apply(DropWaiter(row.waiter_id))  # its caller is gone
        return True
    call, digest = _call_of(row.call)
    if revoked(batch, call):
        batch.tx.apply(DropWaiter(row.waiter_id))
        if local is not None:
            local.refused = KeyRevoked()
        batch.served.append((row.worker, row.waiter_id))  # woken to learn it was refused
        return True
    res = batch.resource(*key)
    token = batch.owner_token(call, row.waiter_id)
    decision = batch.decide(call, res, now, token)
    if should_wait(call, decision):
        return False
    # a retry of this request must get the replay: remember it like any grant
    answer = batch.commit(call, res, decision, now, token, digest)
    if local is not None:
        local.granted = answer
        batch.tx.apply(DropWaiter(row.waiter_id))
    else:  # the data, which never holds the owner token: its process derives it
        batch.tx.apply(GrantWaiter(row.waiter_id, json.dumps(answer.data)))
    batch.served.append((row.worker, row.waiter_id))
    return True


def collect(batch: Batch, waiter: Waiter, now: int, final: bool) -> Answer | None:
    """A waiter's grant if one came (its row answered); else, ``final`` (the wait is over),
    one plain attempt that refuses like rule 8 if still held, else ``None``. A waiter whose key
    was revoked gets ``None`` and :attr:`~ledger.lease.calls.Waiter.refused`, its row dropped."""
    if waiter.granted is not None:
        return waiter.granted
    if revoked(batch, waiter.call):
        leave(batch, waiter)
        waiter.refused = KeyRevoked()
        return None
    row = batch.tx.waiter(waiter.waiter_id)
    if row is not None and row.answer is not None:
        batch.tx.apply(DropWaiter(waiter.waiter_id))
        return _collected(batch, waiter, row.answer)
    if not final:
        return None
    if row is not None:
        batch.tx.apply(DropWaiter(waiter.waiter_id))
    call = waiter.call
    res = batch.resource(call.tenant, call.resource)
    token = batch.owner_token(call, waiter.waiter_id)
    decision = batch.decide(call, res, now, token)
    if decision.outcome is Outcome.HELD:
        decision.witnesses.append({"rule": "wait", "reason": "timed out"})
    return batch.commit(call, res, decision, now, token, request_digest(batch, call))


def leave(batch: Batch, waiter: Waiter) -> None:
    """The caller is gone: its row goes (a grant already made stands, as a lost answer)."""
    batch.tx.apply(DropWaiter(waiter.waiter_id))


def purge(batch: Batch, dead: Callable[[list[str]], list[str]]) -> None:
    """Drop the waiters of workers that died (the leader's round)."""
    for worker in dead(batch.tx.waiter_workers()):
        batch.tx.apply(DropWorkerWaiters(worker))


def _collected(batch: Batch, waiter: Waiter, data: dict[str, Any]) -> Answer:
    outcome = Outcome(data["outcome"])
    granted = outcome is Outcome.GRANTED
    token = batch.owner_token(waiter.call, waiter.waiter_id) if granted else None
    return Answer(data, outcome, granted, owner_token=token, cite=True)


def revoked(batch: Batch, call: LeaseCall) -> bool:
    """Whether the call came with an API key that no longer exists, as this transaction sees."""
    key = call.key_digest
    return key is not None and batch.tx.api_key_tenant(bytes.fromhex(key)) is None


def should_wait(call: LeaseCall, decision: Decision) -> bool:
    """Rule 9: a call that may wait, refused because another holds the slot."""
    waits = call.op == Op.WAIT or call.wait_seconds is not None
    return waits and decision.outcome is Outcome.HELD and not decision.same_holder_label


def _stored_call(call: LeaseCall, digest: bytes | None) -> str:
    """The call as a waiter row keeps it: never its owner token (no secret at rest); the
    request digest of rule 12 instead, which is all the token counted for."""
    fields = asdict(call)
    fields["owner_token"] = None
    return json.dumps({"call": fields, "digest": None if digest is None else digest.hex()})


def _call_of(stored: dict[str, Any]) -> tuple[LeaseCall, bytes | None]:
    digest = stored["digest"]
    return LeaseCall(**stored["call"]), None if digest is None else bytes.fromhex(digest)
