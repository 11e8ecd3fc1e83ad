"""The records of the lease state machine (``ledger/lease/leases.py``): a resource and its leases,
the events a decision makes, the decision itself, and the outcomes and event kinds answers and
ledger entries name. Plain data, and the two builders the rules make an event and a witness
with (:func:`event_for`, :func:`witness`): the rules that change them are in
``ledger/lease/leases.py``, which exports the records too."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """The answer's ``outcome`` (DESIGN §3.2); refusals map to HTTP 409 at the edge."""

    GRANTED = "GRANTED"
    RENEWED = "RENEWED"
    RELEASED = "RELEASED"
    COMPLETED = "COMPLETED"
    HELD = "HELD"
    LOST = "LOST"
    NOT_ACTIVE = "NOT_ACTIVE"
    CONFLICT = "CONFLICT"
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
    FREE = "FREE"
    HOLDING = "HOLDING"


class EventKind(StrEnum):
    """What a ledger entry records (docs/decisions/0001-ledger-entry-format.md)."""

    ACQUIRE = "acquire"
    RENEW = "renew"
    RELEASE = "release"
    EXPIRE = "expire"
    COMPLETE = "complete"
    SCOPE_RELEASE = "scope_release"
    REVOKE = "revoke"


@dataclass(slots=True)
class Lease:
    holder: str
    fencing_token: int
    owner_digest: bytes
    expires_at: int
    scope: str | None = None
    lease_id: int = 0
    """The ledger index of the grant: public, unique, assigned by the service when it records it."""


@dataclass(slots=True)
class Completion:
    result: Any
    completed_at: int
    fingerprint: bytes | None


@dataclass(slots=True)
class Resource:
    tenant: str
    name: str
    capacity: int = 1
    max_token: int = 0
    lifecycle_end: int | None = None
    fingerprint: bytes | None = None
    completion: Completion | None = None
    leases: list[Lease] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Revocation:
    """Who ended a lease by force and why (docs/decisions/0011-operator-revoke.md)."""

    by: str
    reason: str


@dataclass(slots=True)
class Event:
    """A state change; the service turns each into one ledger entry. Never changed once made
    (not frozen only because a frozen dataclass is ~7× slower to build, once per event)."""

    kind: EventKind
    lease: Lease
    time: int
    expires_at: int
    lifecycle_end: int
    capacity: int
    trigger: str | None = None
    revocation: Revocation | None = None


@dataclass(slots=True)
class Decision:
    outcome: Outcome
    events: list[Event] = field(default_factory=list)
    lease: Lease | None = None
    witnesses: list[dict[str, Any]] = field(default_factory=list)
    same_holder_label: bool = False

    @property
    def changed(self) -> bool:
        return any(e.kind is not EventKind.EXPIRE for e in self.events)


@dataclass(slots=True)
class AcquireArgs:
    holder: str
    ttl_ms: int
    lifecycle_ms: int
    owner_digest: bytes
    """Digest of the owner token the grant would carry (drawn by the caller)."""
    presented_owner: bytes | None = None
    fencing_token: int | None = None
    capacity: int | None = None
    fingerprint: bytes | None = None
    scope: str | None = None
    token_floor: int = 0
    """The ledger's fencing floor: a fresh grant's token is above it (rule 2)."""


class IllegalTransition(Exception):
    """A caller asked the machine for something no rule allows (a programming error)."""


def event_for(
    resource: Resource,
    kind: EventKind,
    lease: Lease,
    now: int,
    trigger: str | None = None,
    revocation: Revocation | None = None,
) -> Event:
    """The event ``kind`` of ``lease`` at ``now``, with the resource's capacity and lifecycle end
    as they stand (the lease's own expiry where no lifecycle runs)."""
    end = resource.lifecycle_end if resource.lifecycle_end is not None else lease.expires_at
    return Event(kind, lease, now, lease.expires_at, end, resource.capacity, trigger, revocation)


def witness(rule: str, **detail: Any) -> dict[str, Any]:
    """One of a decision's ``witnesses``: the rule that decided and what it saw."""
    return {"rule": rule, **detail}
