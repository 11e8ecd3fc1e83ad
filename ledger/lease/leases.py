"""The lease state machine of DESIGN §2: pure, strict, time passed in.

One :class:`Resource` holds everything the rules need about a (tenant, resource) pair. The
functions below apply one operation to it at time ``now`` (integer milliseconds since the Unix
epoch, the server's clock) and return a :class:`Decision`: the outcome, the events that changed
state (each becomes a ledger entry), and what the answer needs. They mutate the resource in place
only when they change state; a refusal leaves it untouched (except for expiries, which §2.7 says
are recorded before anything else).

Rules (DESIGN §2):

1. Exclusive: at most ``capacity`` live leases; a request naming another capacity than the live
   one is ``CONFLICT``.
2. Fencing: a fresh grant gets ``max(max_token, token_floor) + 1`` (the floor a restore sets,
   ``ledger/fencing_floor.py``); ``max_token`` never decreases.
3. Owner proof: renew, release and complete need the owner digest of a live lease, compared in
   constant time; otherwise ``LOST`` (release: ``NOT_ACTIVE``, rule 6).
4. Re-acquire with the live lease's owner token renews it; the same holder label without the
   token is refused with ``same_holder_label``.
5. Renew: ``expires_at = min(now + ttl, lifecycle_end)``, same fencing token.
6. Release frees the slot; releasing a lease that is not live is ``NOT_ACTIVE``.
7. Expiry: ``expires_at <= now`` is not live; every operation records expiries first.
8. Refusal ``HELD`` names the holders and the earliest expiry.
10. Complete ends the lease with a result; until the lifecycle ends an acquire with the same
    fingerprint answers ``COMPLETED``, another fingerprint ``CONFLICT``.
11. The first fingerprint given in a lifecycle binds it.

An operator's ``revoke`` (docs/decisions/0011) ends live leases without owner proof, recording
who and why; rule 2 alone fences the revoked holders, as the next grant takes ``max_token + 1``.

Rules 9 (wait), 12 (idempotency) and 13 (scopes) span several resources or time; the service
around this module implements them on top of these functions.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, TypeVar

from ledger.lease.lease_model import (
    AcquireArgs,
    Completion,
    Decision,
    Event,
    EventKind,
    IllegalTransition,
    Lease,
    Outcome,
    Resource,
    Revocation,
    event_for,
    witness,
)

__all__ = [  # the records (ledger/lease/lease_model.py) and the rules
    "AcquireArgs",
    "Completion",
    "Decision",
    "Event",
    "EventKind",
    "IllegalTransition",
    "Lease",
    "Outcome",
    "Resource",
    "Revocation",
    "acquire",
    "complete",
    "end_lease",
    "expire",
    "find_owner",
    "get",
    "live",
    "next_expiry",
    "release",
    "renew",
    "revoke",
]

_Arg = TypeVar("_Arg")


def live(resource: Resource, now: int) -> list[Lease]:
    """The leases still live at ``now`` (rule 7: ``expires_at <= now`` is not)."""
    return [lease for lease in resource.leases if lease.expires_at > now]


def expire(resource: Resource, now: int) -> list[Event]:
    """Rule 7: take back every lease whose time is up; end a finished lifecycle."""
    gone = [lease for lease in resource.leases if lease.expires_at <= now]
    events = [event_for(resource, EventKind.EXPIRE, lease, now) for lease in gone]
    if gone:
        resource.leases = [lease for lease in resource.leases if lease.expires_at > now]
    if resource.lifecycle_end is not None and now >= resource.lifecycle_end:
        # No lease outlives its lifecycle (rule 5), so none is live here.
        resource.lifecycle_end = None
        resource.fingerprint = None
        resource.completion = None
    return events


def next_expiry(resource: Resource) -> int | None:
    """The earliest ``expires_at`` among the leases, if any."""
    return min((lease.expires_at for lease in resource.leases), default=None)


def find_owner(resource: Resource, owner_digest: bytes | None) -> Lease | None:
    """Rule 3: the live lease whose owner digest matches, compared in constant time."""
    if owner_digest is None:
        return None
    found = None
    for lease in resource.leases:
        if hmac.compare_digest(lease.owner_digest, owner_digest):
            found = lease
    return found


def acquire(resource: Resource, args: AcquireArgs, now: int) -> Decision:
    """Grant a slot (rules 1, 2, 4, 10, 11), after recording expiries: ``GRANTED``, ``RENEWED``
    (the owner re-acquires), ``COMPLETED``, or a refusal (``HELD``, ``CONFLICT``)."""
    expired = expire(resource, now)
    decision = _acquire(resource, args, now)
    decision.events[:0] = expired
    return decision


def _acquire(resource: Resource, args: AcquireArgs, now: int) -> Decision:
    mine = find_owner(resource, args.presented_owner)
    if mine is None:
        refusal = _check_acquire(resource, args, now)
        return refusal if refusal is not None else _grant(resource, args, now)
    if args.fencing_token is not None and args.fencing_token != mine.fencing_token:
        return Decision(Outcome.LOST, witnesses=[witness("fencing", reason="token mismatch")])
    return _renew(resource, mine, args.ttl_ms, now)


def _check_acquire(resource: Resource, args: AcquireArgs, now: int) -> Decision | None:
    done = resource.completion
    if done is not None:
        if args.fingerprint is None or done.fingerprint in (None, args.fingerprint):
            return Decision(Outcome.COMPLETED, witnesses=[witness("complete", held=True)])
        return Decision(Outcome.CONFLICT, witnesses=[witness("fingerprint", reason="completed")])
    if args.fingerprint is not None and resource.fingerprint not in (None, args.fingerprint):
        return Decision(Outcome.CONFLICT, witnesses=[witness("fingerprint", reason="mismatch")])
    held = resource.leases
    if held and args.capacity is not None and args.capacity != resource.capacity:
        sizes = witness("capacity", live=resource.capacity, requested=args.capacity)
        return Decision(Outcome.CONFLICT, witnesses=[sizes])
    if any(lease.holder == args.holder for lease in held):
        label = witness("same-holder-label", reason="ownerToken required to renew")
        return Decision(Outcome.HELD, witnesses=[label], same_holder_label=True)
    capacity = resource.capacity if held else (args.capacity or 1)
    if len(held) >= capacity:
        return Decision(Outcome.HELD, witnesses=[witness("exclusive", capacity=capacity)])
    return None


def _grant(resource: Resource, args: AcquireArgs, now: int) -> Decision:
    if not resource.leases:
        resource.capacity = args.capacity or 1
    if resource.lifecycle_end is None:
        resource.lifecycle_end = now + args.lifecycle_ms
    if resource.fingerprint is None:
        resource.fingerprint = args.fingerprint
    resource.max_token = max(resource.max_token, args.token_floor) + 1
    lease = Lease(
        holder=args.holder,
        fencing_token=resource.max_token,
        owner_digest=args.owner_digest,
        expires_at=min(now + args.ttl_ms, resource.lifecycle_end),
        scope=args.scope,
    )
    resource.leases.append(lease)
    event = event_for(resource, EventKind.ACQUIRE, lease, now)
    return Decision(
        Outcome.GRANTED, [event], lease, [witness("fencing", token=lease.fencing_token)]
    )


def renew(
    resource: Resource, owner_digest: bytes, fencing_token: int | None, ttl_ms: int, now: int
) -> Decision:
    """Extend the owner's live lease (rule 5), same fencing token; else ``LOST``."""
    return _as_owner(resource, owner_digest, fencing_token, now, Outcome.LOST, _renew, ttl_ms)


def _renew(resource: Resource, lease: Lease, ttl_ms: int, now: int) -> Decision:
    assert resource.lifecycle_end is not None
    lease.expires_at = min(now + ttl_ms, resource.lifecycle_end)
    capped = witness("lifecycle", capped=lease.expires_at == resource.lifecycle_end)
    event = event_for(resource, EventKind.RENEW, lease, now)
    return Decision(Outcome.RENEWED, [event], lease, [capped])


def release(
    resource: Resource, owner_digest: bytes, fencing_token: int | None, now: int
) -> Decision:
    """Free the owner's slot (rule 6); a lease that is not live is ``NOT_ACTIVE``."""
    missing = Outcome.NOT_ACTIVE  # rule 6: from the caller's view its lease is no longer live
    return _as_owner(resource, owner_digest, fencing_token, now, missing, _end, EventKind.RELEASE)


def complete(
    resource: Resource, owner_digest: bytes, fencing_token: int | None, result: Any, now: int
) -> Decision:
    """End the owner's lease with ``result`` (rule 10), kept until the lifecycle ends."""
    return _as_owner(resource, owner_digest, fencing_token, now, Outcome.LOST, _complete, result)


def _complete(resource: Resource, lease: Lease, result: Any, now: int) -> Decision:
    resource.completion = Completion(result, now, resource.fingerprint)
    decision = _end(resource, lease, EventKind.COMPLETE, now)
    decision.outcome = Outcome.COMPLETED
    return decision


def _as_owner(
    resource: Resource,
    owner_digest: bytes,
    fencing_token: int | None,
    now: int,
    missing: Outcome,
    act: Callable[[Resource, Lease, _Arg, int], Decision],
    arg: _Arg,
) -> Decision:
    """Rules 3 and 7 for every owner operation: record expiries, then ``act(resource, lease, arg,
    now)`` only for the live lease the owner digest (and fencing token, if given) names."""
    expired = expire(resource, now)
    lease = find_owner(resource, owner_digest)
    if lease is None:
        reason = "ownerToken does not match the live lease" if resource.leases else "no live lease"
        decision = Decision(missing, witnesses=[witness("owner", reason=reason)])
    elif fencing_token is not None and fencing_token != lease.fencing_token:
        decision = Decision(Outcome.LOST, witnesses=[witness("fencing", reason="token mismatch")])
    else:
        decision = act(resource, lease, arg, now)
    decision.events[:0] = expired
    return decision


def end_lease(resource: Resource, lease: Lease, kind: EventKind, now: int, trigger: str) -> Event:
    """Scope release and the dead-man switch end a lease without its owner token (rule 13)."""
    if lease not in resource.leases:
        raise IllegalTransition("lease is not live")
    resource.leases.remove(lease)
    return event_for(resource, kind, lease, now, trigger)


def revoke(
    resource: Resource,
    why: Revocation,
    now: int,
    holder: str | None = None,
    fencing_token: int | None = None,
) -> Decision:
    """An operator ends, without owner token, the live leases ``holder`` and ``fencing_token``
    name (every one if neither): ``RELEASED``, or ``NOT_ACTIVE`` when none matches. The next
    grant gets ``max_token + 1`` (rule 2), above every token revoked."""
    expired = expire(resource, now)
    chosen = [
        lease
        for lease in resource.leases
        if holder in (None, lease.holder) and fencing_token in (None, lease.fencing_token)
    ]
    if not chosen:
        decision = Decision(
            Outcome.NOT_ACTIVE, witnesses=[witness("revoke", reason="no live lease")]
        )
    else:
        for lease in chosen:
            resource.leases.remove(lease)
        events = [event_for(resource, EventKind.REVOKE, lease, now, None, why) for lease in chosen]
        fenced = witness("fencing", nextToken=resource.max_token + 1)
        decision = Decision(Outcome.RELEASED, events, chosen[-1], [fenced])
    decision.events[:0] = expired
    return decision


def _end(resource: Resource, lease: Lease, kind: EventKind, now: int) -> Decision:
    resource.leases.remove(lease)
    return Decision(Outcome.RELEASED, [event_for(resource, kind, lease, now)], lease)


def get(resource: Resource, now: int) -> Decision:
    """Read the resource after recording expiries: ``HOLDING`` or ``FREE``."""
    expired = expire(resource, now)
    outcome = Outcome.HOLDING if resource.leases else Outcome.FREE
    return Decision(outcome, expired)
