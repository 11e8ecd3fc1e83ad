"""The storage seam (docs/decisions/0005): what the ledger needs from a durable backend.

Every write happens inside :meth:`Storage.transaction`: one write transaction that the backend
serializes against every other writer (SQLite: ``BEGIN IMMEDIATE`` on the one file;
PostgreSQL: the ``log_head`` row lock, ``ledger/postgres/``) and commits durably on exit, or
rolls back if the block raises.
The group committer (``ledger/committer.py``) runs every batch queued since its last commit in
one such transaction. Reads outside a transaction see only committed data. A backend lives in
its own subpackage (``ledger/sqlite/``), is opened by :func:`open_storage`, and passes the
contract suite ``tests/test_storage_contract.py``; nothing above this module knows SQL.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ledger.changes import Change, PutCheckpoint
from ledger.leases import Resource

if TYPE_CHECKING:
    from ledger.names import NameCodec

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

    def resource(self, tenant: str, name: str) -> Resource | None:
        """The resource row with its live leases, as this transaction sees it."""
        ...

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        """:meth:`resource` of many at once (those that exist), as the batch about to be
        decided names them (issue 10)."""
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

    def expired_leases(self, now: int, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` distinct (tenant, resource) holding a lease with ``expires_at <= now``
        (an index on ``expires_at``: the sweeper never walks every lease)."""
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


class Turns(Protocol):
    """A backend's write lock, taken by one thread for another (docs/decisions/0017)."""

    def lend(self, thread: int) -> None:
        """Wait for the lock and hold it for ``thread`` (an ident): its transactions, until
        :meth:`give_back`, run under it without taking it again."""
        ...

    def give_back(self) -> None: ...


class Storage(Protocol):
    """A ledger backend: the write transaction, and the reads of the loop thread."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """One durable write transaction, serialized against every other writer."""
        ...

    def turns(self) -> Turns | None:
        """The write lock, where a transaction is short and local enough for the event loop to
        run it itself (SQLite); ``None`` where writes stay on a writer thread (PostgreSQL,
        whose transactions wait for the network)."""
        ...

    def tree_size(self) -> int: ...

    def node(self, level: int, index: int) -> bytes:
        """A stored perfect-subtree hash; ``KeyError`` if absent."""
        ...

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        """Make, outside any transaction, what writing this lease's rows will need (digests,
        sealed names), so the write transaction, which excludes every other writer, only looks
        it up (issue 10). Nothing is written; a backend without sealed names does nothing."""
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

    def live_leases(self, now: int) -> int:
        """How many leases have not expired at ``now`` (ms), by the expiry index (metrics)."""
        ...

    def queued_waiters(self) -> int:
        """How many callers wait for a lease now, over every process and node (metrics)."""
        ...

    def export_snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def check_writable(self) -> None:
        """Raise :class:`StorageError` if a write transaction cannot be taken (a read-only
        ledger), so that a server refuses to start rather than fail its first write."""
        ...

    def close(self) -> None: ...


def open_storage(location: Path | str, *, names: NameCodec | None = None) -> Storage:
    """The ledger's backend: a ``postgresql://`` URL opens PostgreSQL (``ledger/postgres/``),
    anything else is the SQLite folder (created if needed). ``names``: the names key's codec
    (docs/decisions/0010);
    without it the state tables (leases, resources, waits) cannot be read or written, and a
    ledger whose names are not sealed yet stays as it is."""
    if is_database_url(location):
        _require_psycopg()
        from ledger.postgres import PostgresStorage

        return PostgresStorage.open(str(location), names=names)
    from ledger.sqlite import SQLiteStorage

    return SQLiteStorage.open(Path(location), names)


def storage_exists(location: Path | str) -> bool:
    """Whether ``location`` (a SQLite folder or a ``postgresql://`` URL) already holds a ledger."""
    if is_database_url(location):
        _require_psycopg()
        from ledger.postgres import exists as postgres_exists

        return postgres_exists(str(location))
    from ledger.sqlite import exists

    return exists(Path(location))


def is_database_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite folder."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def _require_psycopg() -> None:
    """The PostgreSQL backend needs the ``[postgres]`` extra: say so rather than a traceback."""
    for module in ("psycopg", "psycopg_pool"):
        if importlib.util.find_spec(module) is None:
            raise StorageError(
                f"a postgresql:// ledger needs {module}: pip install 'tenure[postgres]'"
            )


HOST_NAME_VARIABLE = "TENURE_HOST_NAME"
"""The log's public host name, if the operator configured one: the default origin's prefix."""


def default_origin(log_id: str, host_name: str | None = None) -> str:
    """The checkpoint origin (and note key name) when the operator names none: unique per log,
    under the log's configured host name (C2SP tlog-checkpoint: a schema-less URL)."""
    return f"{host_name or 'tenure.local'}/log/{log_id}"
