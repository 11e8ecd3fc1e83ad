"""What the service asks storage to make durable: typed changes, not SQL.

The service and the recorder describe each state change as one of these records; the storage
backend translates them (``ledger/sqlite/store.py`` for SQLite). A second backend — PostgreSQL —
writes its own translation and nothing above it changes (STYLE 9). Each batch submitted is
applied in order, in one transaction.

The kinds every lease event makes (an entry, its tree nodes, a lease and a resource row) are
slotted dataclasses that are not frozen, to be built fast — a frozen one sets each field through
``object.__setattr__``, ~2 µs for eight fields against ~0.3; none is ever changed
after it is made, and none is hashed. The others are frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any


@dataclass(slots=True)
class AppendEntry:
    """A ledger entry: its exact canonical bytes at its index (append-only)."""

    index: int
    leaf: bytes


@dataclass(slots=True)
class PutNodes:
    """New perfect-subtree hashes of the Merkle tree: (level, index, hash) (append-only)."""

    nodes: tuple[tuple[int, int, bytes], ...]


@dataclass(slots=True)
class PutLease:
    tenant: str
    resource: str
    fencing_token: int
    holder: str
    owner_digest: bytes
    expires_at: int
    scope: str | None
    lease_id: int


@dataclass(slots=True)
class SetLeaseExpiry:
    tenant: str
    resource: str
    fencing_token: int
    expires_at: int


@dataclass(slots=True)
class DropLease:
    tenant: str
    resource: str
    fencing_token: int


@dataclass(slots=True)
class PutResource:
    """The whole resource row, with ``max_token``: it commits with the entry of a grant."""

    tenant: str
    name: str
    capacity: int
    max_token: int
    lifecycle_end: int | None
    fingerprint: bytes | None
    result_json: str | None
    completed_at: int | None
    completed_fingerprint: bytes | None


@dataclass(frozen=True, slots=True)
class RememberRequest:
    """An idempotency record (rule 12): the answer to replay, never a secret."""

    tenant: str
    request_id: str
    digest: bytes
    answer_json: str
    created_at: int


@dataclass(frozen=True, slots=True)
class ForgetRequests:
    before: int


@dataclass(frozen=True, slots=True)
class ArmDeadMan:
    tenant: str
    scope: str
    dead_ms: int
    last_beat: int


@dataclass(frozen=True, slots=True)
class DisarmDeadMan:
    tenant: str
    scope: str


@dataclass(frozen=True, slots=True)
class AddWaiter:
    """A caller blocked in a wait (rule 9), queued behind every earlier one of its resource.

    ``call`` is the call as JSON without its owner token (never at rest); ``worker`` names the
    process whose caller waits, which is told when the waiter is granted."""

    waiter_id: str
    tenant: str
    resource: str
    worker: str
    call: str


@dataclass(frozen=True, slots=True)
class GrantWaiter:
    """The waiter got a slot: the answer's data (without the owner token) for it to collect."""

    waiter_id: str
    answer: str


@dataclass(frozen=True, slots=True)
class DropWaiter:
    waiter_id: str


@dataclass(frozen=True, slots=True)
class DropWorkerWaiters:
    """A worker process died: nobody will collect its waiters."""

    worker: str


@dataclass(frozen=True, slots=True)
class RaiseFencingFloor:
    """Every later grant's fencing token is above ``floor`` (``ledger/fencing_floor.py``); a
    floor below the stored one changes nothing: the floor only rises."""

    floor: int


@dataclass(frozen=True, slots=True)
class PutCheckpoint:
    tree_size: int
    root_hash: bytes
    timestamp: int
    note: str
    key_did: str


Change = (
    AppendEntry
    | PutNodes
    | PutLease
    | SetLeaseExpiry
    | DropLease
    | PutResource
    | RememberRequest
    | ForgetRequests
    | ArmDeadMan
    | DisarmDeadMan
    | AddWaiter
    | GrantWaiter
    | DropWaiter
    | DropWorkerWaiters
    | PutCheckpoint
    | RaiseFencingFloor
)


_COLUMNS: dict[type, Any] = {}


def row(change: Any) -> tuple[object, ...]:
    """The change's fields in declaration order, the column order of a backend's statement
    (one C call per change: this runs for several changes of every lease event)."""
    getter = _COLUMNS.get(type(change))
    if getter is None:
        getter = _COLUMNS[type(change)] = attrgetter(*(f.name for f in fields(change)))
    values = getter(change)
    return values if type(values) is tuple else (values,)
