"""The storage seam (docs/decisions/0005): what the ledger needs from a durable backend.

Every write happens inside :meth:`Storage.transaction`: one write transaction that the backend
serializes against every other writer and commits durably on exit, or rolls back if the block
raises. Reads outside a transaction see only committed data. A backend lives in its own
subpackage (``ledger/sqlite/``, ``ledger/postgres/``), is opened by ``ledger/backends.py``, and
passes ``tests/test_storage_contract.py``; nothing above this module knows SQL. What a backend
may offer beyond the seam — the writer's speed hooks, the gauges — are protocols of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ledger.changes import Change, PutCheckpoint
from ledger.lease.leases import Lease, Resource

CheckpointRecord = PutCheckpoint
"""A stored signed checkpoint: what :class:`PutCheckpoint` stored is what is read back."""


class StorageError(Exception):
    """The storage could not durably record a change; the outcome is unknown."""


DAMAGED = (
    "the ledger's state is damaged: a lease has no row for its resource, so the resource's"
    " highest fencing token is unknown"
)
"""What every backend says of a lease row whose resource row is gone: refused, never guessed
(a fresh resource's token 1 would repeat a token already handed out)."""


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A public signing key the log has used, with its validity period (ms since the epoch)."""

    did: str
    public_key: bytes
    multikey: str
    valid_from: int
    valid_until: int | None


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """An API key as stored: only its SHA-256, never the key."""

    digest: bytes
    tenant: str
    name: str
    created_at: int


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """An idempotency record (rule 12): the request's digest and the answer to replay."""

    digest: bytes
    answer: dict[str, Any]
    created_at: int


@dataclass(frozen=True, slots=True)
class WaiterRecord:
    """A queued waiter (rule 9, :class:`~ledger.changes.AddWaiter`): the call as stored, and
    once granted the answer's data for it to collect."""

    waiter_id: str
    worker: str
    call: dict[str, Any]
    answer: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Listed:
    """A resource with leases live at the time asked, as a listing found it: ``position`` is
    where it stands in the backend's order (a later scan goes on after it)."""

    name: str
    capacity: int
    leases: tuple[Lease, ...]
    position: bytes


@dataclass(frozen=True, slots=True)
class LeaseScan:
    """One bounded step of a tenant's listing: what it found, in order, and the position to go
    on from (None: the scan reached the tenant's last resource)."""

    found: list[Listed]
    next: bytes | None


class Transaction(Protocol):
    """One open write transaction: typed changes in, and the reads a decision needs."""

    def apply(self, change: Change) -> None:
        """Apply one change (``ledger/changes.py``); append-only tables refuse rewrites."""
        ...

    def flush(self) -> None:
        """Write whatever the transaction holds back (the commit would), so that what is left
        is the commit itself: the committer calls it before it shows a batch's results to
        their callers early (docs/decisions/0014)."""
        ...

    def tree_size(self) -> int: ...

    def node(self, level: int, index: int) -> bytes:
        """A stored perfect-subtree hash; ``KeyError`` if absent."""
        ...

    def entry(self, index: int) -> bytes | None:
        """Entry ``index``'s exact bytes as this transaction sees them (the writer reads the
        last one's time: no entry is dated before it)."""
        ...

    def fencing_floor(self) -> int:
        """Every grant's fencing token is above it (0: none; ``ledger/fencing_floor.py``)."""
        ...

    def highest_token(self) -> int:
        """The highest fencing token any resource has granted (0: none)."""
        ...

    def resource(self, tenant: str, name: str) -> Resource | None:
        """The resource row with its live leases, as this transaction sees it."""
        ...

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        """:meth:`resource` of many at once (those that exist), as the batch about to be
        decided names them: one read for the batch."""
        ...

    def request(self, tenant: str, request_id: str) -> RequestRecord | None: ...

    def api_key_tenant(self, digest: bytes) -> str | None:
        """The API key's tenant as this transaction sees it (None: revoked or unknown)."""
        ...

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        """``value`` (a digest of a caller's input: a request, a fingerprint) keyed under the
        names key for its tenant (docs/decisions/0010), so a stolen database cannot test
        guesses against it."""
        ...

    def expired(self, now: int, limit: int) -> dict[tuple[str, str], Resource]:
        """The resources holding the (up to ``limit``) leases with the oldest ``expires_at <=
        now``, whole, with all their leases, as :meth:`resources` reads them (an index on
        ``expires_at``: the sweeper never walks every lease)."""
        ...

    def ended_lifecycles(self, now: int, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` resources (tenant, name) whose lifecycle ended at or before ``now``
        (an index on ``lifecycle_end``): their fingerprint and completed result are purged."""
        ...

    def due_scopes(self, now: int, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` armed dead-man switches (tenant, scope) whose deadline
        ``last_beat + dead_ms`` is ``<= now`` (an index on the deadline)."""
        ...

    def scope_resources(self, tenant: str, scope: str) -> list[str]:
        """The names of the tenant's resources holding a lease in ``scope``, sorted."""
        ...

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        """The resource's waiters not yet granted, in the order they queued (FIFO)."""
        ...

    def waiter(self, waiter_id: str) -> WaiterRecord | None:
        """One waiter, granted or not."""
        ...

    def waiter_workers(self) -> list[str]:
        """The workers that have waiters queued (the leader purges those that died)."""
        ...


class Snapshot(Protocol):
    """A consistent read view of the whole ledger (``tenure export``)."""

    def tree_size(self) -> int: ...

    def node(self, level: int, index: int) -> bytes:
        """A stored perfect node of the tree, as :meth:`Storage.node`."""
        ...

    def log_id(self) -> str: ...

    def signing_keys(self) -> list[KeyRecord]: ...

    def entries(self, end: int) -> Iterator[tuple[int, bytes]]:
        """Entries ``[0, end)`` in index order, streamed."""
        ...

    def checkpoints(self, up_to: int) -> Iterator[CheckpointRecord]:
        """Checkpoints of tree size ≤ ``up_to``, smallest first."""
        ...

    def latest_checkpoint(self) -> CheckpointRecord | None: ...


class Storage(Protocol):
    """A ledger backend: the write transaction, and the reads of the loop thread."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """One durable write transaction, serialized against every other writer."""
        ...

    def tree_size(self) -> int: ...

    def node(self, level: int, index: int) -> bytes:
        """A stored perfect-subtree hash; ``KeyError`` if absent."""
        ...

    def entry(self, index: int) -> bytes | None: ...

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        """Entries ``[start, end)`` that exist, in index order."""
        ...

    def latest_checkpoint(self) -> CheckpointRecord | None: ...

    def checkpoint(self, tree_size: int) -> CheckpointRecord | None:
        """The checkpoint signed at exactly ``tree_size``, if any."""
        ...

    def checkpoints(self, start: int, limit: int) -> list[CheckpointRecord]:
        """Checkpoints of tree size ≥ ``start``, smallest first, at most ``limit``."""
        ...

    def signing_keys(self) -> list[KeyRecord]:
        """Every signing key ever used, oldest first."""
        ...

    def record_key_use(self, key: KeyRecord) -> None:
        """``key`` starts signing at ``key.valid_from``: every other open key ends there."""
        ...

    def api_key_tenant(self, digest: bytes) -> str | None: ...

    def add_api_key(self, record: ApiKeyRecord) -> None: ...

    def api_keys(self) -> list[ApiKeyRecord]: ...

    def revoke_api_key(self, digest: bytes) -> bool:
        """Forget a key; whether it existed."""
        ...

    def log_id(self) -> str:
        """A random id fixed when the ledger was created (the default checkpoint origin)."""
        ...

    def fencing_floor(self) -> int:
        """As :meth:`Transaction.fencing_floor`, as committed."""
        ...

    def live_resources(self, tenant: str, after: bytes, now: int, scan: int) -> LeaseScan:
        """The tenant's resources with a lease live at ``now`` (``expires_at > now``) among the
        next ``scan`` of its resources after position ``after`` (``b""``: the first), in the
        order of their names' digests — a stable order that grants and releases between two
        scans do not shift (docs/decisions/0034)."""
        ...

    def export_snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def check_writable(self) -> None:
        """Raise :class:`StorageError` if a write transaction cannot be taken (a read-only
        ledger), so that a server refuses to start rather than fail its first write."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Gauges(Protocol):
    """What a backend counts for the metrics, read at scrape time."""

    def live_leases(self, now: int) -> int:
        """How many leases have not expired at ``now`` (ms), by the expiry index."""
        ...

    def queued_waiters(self) -> int:
        """How many callers wait for a lease now, over every process and node."""
        ...
