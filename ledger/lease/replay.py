"""Rule 12 inside the transaction: a call whose requestId was seen before is answered as then.

Which calls are remembered, and the keyed digest of their input, are decided here too. The
stored answer comes back marked ``replayed``; the same requestId with other input is an
idempotency conflict. A replayed grant or renewal never tells its caller it holds a lease that
has since ended (docs/decisions/0007): ``leaseLive`` says whether it still does; if not, the
outcome is ``LOST``. A fresh grant's owner token, derived from the requestId, is handed back only
while it does. Every other replay is the first answer as it was.
"""

from __future__ import annotations

from typing import Any

from ledger.keys.names import REQUEST_INPUT
from ledger.lease import leases
from ledger.lease.answers import GRANTING
from ledger.lease.batch import Batch
from ledger.lease.calls import Answer, LeaseCall, owner_digest
from ledger.lease.leases import Decision, Outcome, Resource
from ledger.lease.ops import ACQUIRING, Op

IDEMPOTENT = frozenset(Op) - {Op.GET}
"""Ops whose requestId is remembered: those that can change state."""


def draws_owner_token(call: LeaseCall) -> bool:
    """Whether a grant to ``call`` carries fresh random bits as its owner token: an acquiring
    call without a requestId. With one, the token is derived from it, so that a replay can
    hand the same back (docs/decisions/0007)."""
    return call.op in ACQUIRING and not call.request_id


def request_digest(batch: Batch, call: LeaseCall) -> bytes | None:
    """The digest of the call's input if its requestId is remembered, keyed under the names
    key (0010); None for a call rule 12 does not apply to."""
    if not call.request_id or call.op not in IDEMPOTENT:
        return None
    return batch.tx.keyed(REQUEST_INPUT, call.tenant, call.digest())


def would_replay(batch: Batch, call: LeaseCall) -> bool:
    """Whether ``call`` would be answered from the answer stored for its requestId (the same
    input): it applies nothing, so the edge lets a throttled tenant send it."""
    digest = request_digest(batch, call)
    if digest is None:
        return False
    known = batch.tx.request(call.tenant, call.request_id or "")
    return known is not None and known.digest == digest


def replayed(batch: Batch, call: LeaseCall, digest: bytes, now: int) -> Answer | None:
    """The answer to ``call`` if its requestId was seen (``digest``: its input's), else None."""
    known = batch.tx.request(call.tenant, call.request_id or "")
    if known is None:
        return None
    res = batch.resource(call.tenant, call.resource)
    if known.digest != digest:
        witness = {"rule": "idempotency", "reason": "requestId reused with other input"}
        decision = Decision(Outcome.IDEMPOTENCY_CONFLICT, witnesses=[witness])
        return Answer(batch.render(call, res, decision, now), decision.outcome)
    data = {**known.answer, "replayed": True}
    if Outcome(data["outcome"]) not in GRANTING:
        return Answer(data, Outcome(data["outcome"]))  # exactly what the first answer said
    # DESIGN rule 12: a replay never tells a caller it holds a lease that has ended
    fresh = data["outcome"] == Outcome.GRANTED
    token = batch.owner_token(call, None) if fresh else call.owner_token
    live = token is not None and _holds(res, token, data["fencingToken"], now)
    data["leaseLive"] = live
    if not live:
        return Answer(_ended(data), Outcome.LOST)
    return Answer(data, Outcome(data["outcome"]), owner_token=token if fresh else None)


def _ended(data: dict[str, Any]) -> dict[str, Any]:
    """A replayed grant or renewal whose lease has since ended: ``LOST``, as a renew of it
    would say, with the first answer's outcome kept as ``firstOutcome`` (0007)."""
    witness = {"rule": "idempotency", "reason": "replayed: the lease it gave has since ended"}
    return data | {
        "status": "fail",
        "outcome": Outcome.LOST.value,
        "firstOutcome": data["outcome"],
        "granted": False,
        "witnesses": [*data.get("witnesses", []), witness],
    }


def _holds(res: Resource, token: str, fencing_token: object, now: int) -> bool:
    """Whether the lease a replayed grant gave out is still live (0007: a replay never claims
    a lease that has since ended)."""
    digest = owner_digest(token)
    return any(
        lease.fencing_token == fencing_token and lease.owner_digest == digest
        for lease in leases.live(res, now)
    )
