"""``PostgresStorage``: the storage Protocol over one PostgreSQL database (docs/postgres.md).

Each :meth:`PostgresStorage.transaction` takes a pooled connection and first locks the one
``log_head`` row, which serializes every writer of every node — one log index sequence, one
tree (docs/decisions/0005, 0006). It runs in pipeline mode: statements whose result nobody
reads are not waited for, so a group commit costs few round trips. Commits are durable
(``synchronous_commit = on``); the loop's reads use one reconnecting connection
(``connection.Reader``); every database failure surfaces as :class:`StorageError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from ledger import sealing
from ledger.changes import Change
from ledger.leases import Resource
from ledger.names import NameCodec, needs_names
from ledger.postgres import reads, store
from ledger.postgres.connection import (
    CONNECT_TIMEOUT,
    Conn,
    Reader,
    configure,
    connect,
    is_database_url,
    redact,
)
from ledger.postgres.group import Ahead, Group
from ledger.postgres.schema import NAMES_STEP, has_ledger, migrate
from ledger.storage import (
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    LeaseScan,
    RequestRecord,
    StorageError,
    WaiterRecord,
)

__all__ = ["PostgresStorage", "exists", "is_database_url"]

T = TypeVar("T")


def exists(url: str) -> bool:
    """Whether the database at ``url`` already holds a ledger."""
    try:
        with connect(url) as conn:
            return has_ledger(conn)
    except psycopg.Error as error:
        raise StorageError(f"cannot reach {redact(url)}: {error}") from error


class PostgresTransaction:
    """One write transaction holding the ``log_head`` row lock; its hot writes are held back
    and its reads made in bulk (``group.py``)."""

    def __init__(self, conn: Conn, names: NameCodec | None, group: Group) -> None:
        self._conn = conn
        self._names_or_none = names
        self._group = group

    @property
    def conn(self) -> Conn:
        """The connection, every held-back write sent: what is read or written next sees them."""
        self._group.flush()
        return self._conn

    @property
    def _names(self) -> NameCodec:
        return needs_names(self._names_or_none)

    def flush(self) -> None:
        """Send the held-back writes (pipelined: nothing is waited for)."""
        self._group.flush()

    def apply(self, change: Change) -> None:
        if not self._group.hold(change):
            store.apply(self.conn, self._names, change)

    def tree_size(self) -> int:
        return self._group.size

    def node(self, level: int, index: int) -> bytes:
        found = self._group.node(level, index)
        return reads.node(self.conn, level, index) if found is None else found

    def entry(self, index: int) -> bytes | None:
        found = self._group.last_entry(index)
        return reads.entry(self.conn, index) if found is None else found

    def resource(self, tenant: str, name: str) -> Resource | None:
        return reads.resource(self.conn, self._names, tenant, name)

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        return self._group.resources(keys)

    def request(self, tenant: str, request_id: str) -> RequestRecord | None:
        return reads.request(self.conn, self._names, tenant, request_id)

    def api_key_tenant(self, digest: bytes) -> str | None:
        return reads.api_key_tenant(self.conn, digest)

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        return self._names.keyed(kind, tenant, value)

    def expired_leases(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.expired_leases(self.conn, self._names, now, limit)

    def ended_lifecycles(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.ended_lifecycles(self.conn, self._names, now, limit)

    def due_scopes(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.due_scopes(self.conn, self._names, now, limit)

    def scope_resources(self, tenant: str, scope: str) -> list[str]:
        return reads.scope_resources(self.conn, self._names, tenant, scope)

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        if self._group.quiet(tenant, resource):
            return []
        return reads.waiters(self.conn, self._names, tenant, resource)

    def waiter(self, waiter_id: str) -> WaiterRecord | None:
        return reads.waiter(self.conn, self._names, waiter_id)

    def waiter_workers(self) -> list[str]:
        return reads.waiter_workers(self.conn)


class PostgresSnapshot:
    """A REPEATABLE READ READ ONLY transaction: every read sees the database as of its first."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def tree_size(self) -> int:
        return reads.tree_size(self._conn)

    def node(self, level: int, index: int) -> bytes:
        return reads.node(self._conn, level, index)

    def log_id(self) -> str:
        return reads.log_id(self._conn)

    def signing_keys(self) -> list[KeyRecord]:
        return reads.keys(self._conn)

    def entries(self, end: int) -> Iterator[tuple[int, bytes]]:
        return reads.stream_entries(self._conn, end)

    def checkpoints(self, up_to: int) -> Iterator[CheckpointRecord]:
        return iter(reads.checkpoints(self._conn, 0, up_to, None))

    def latest_checkpoint(self) -> CheckpointRecord | None:
        return reads.latest_checkpoint(self._conn)


class PostgresStorage:
    """The ledger in the PostgreSQL database at ``url``."""

    def __init__(self, url: str, pool: ConnectionPool[Conn], names: NameCodec | None = None):
        self.url = url
        self._names = names
        self._pool = pool
        self._reader = Reader(url)
        self._ahead = Ahead()

    @classmethod
    def open(
        cls, url: str, *, timeout: float = 5.0, names: NameCodec | None = None
    ) -> PostgresStorage:
        """Open (creating and migrating the schema if needed; nodes starting together wait
        for each other). ``timeout``: seconds a write waits for a connection before the storage
        is unavailable. ``names``: the names key, which the state tables need and sealing an
        older ledger's names too (docs/decisions/0010). Failures raise :class:`StorageError`
        saying why, without the URL's password."""
        try:
            with connect(url) as conn:
                version = migrate(conn, names)
        except psycopg.Error as error:
            raise StorageError(f"cannot open the ledger in {redact(url)}: {error}") from error
        sealed = names if version >= NAMES_STEP else None
        return cls(url, _pool(url, timeout), sealed)

    def check_writable(self) -> None:
        """Take and drop the log-head lock: raises :class:`StorageError` if writes are refused."""
        with self.transaction():
            pass

    def turns(self) -> None:
        """Writes stay on the committer's writer thread: a transaction waits for the server."""
        return None

    @contextmanager
    def transaction(self) -> Iterator[PostgresTransaction]:
        try:
            with self._pool.connection() as conn, conn.pipeline(), conn.transaction():
                group = Group.open(conn, self._names, self._ahead)
                tx = PostgresTransaction(conn, self._names, group)
                yield tx
                tx.flush()
            group.committed(self._ahead)
        except psycopg.Error as error:
            raise StorageError(f"the ledger database refused a write: {error}") from error

    def _read(self, read: Callable[[Conn], T]) -> T:
        return self._reader.run(read)

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        if self._names is not None:
            sealing.warm_lease(self._names, tenant, resource, holder, scope)
            self._ahead.note(tenant, resource)  # read with the lock, in its round trip

    def tree_size(self) -> int:
        return self._read(reads.tree_size)

    def node(self, level: int, index: int) -> bytes:
        return self._read(lambda conn: reads.node(conn, level, index))

    def entry(self, index: int) -> bytes | None:
        return self._read(lambda conn: reads.entry(conn, index))

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        return self._read(lambda conn: reads.entries(conn, start, end))

    def latest_checkpoint(self) -> CheckpointRecord | None:
        return self._read(reads.latest_checkpoint)

    def checkpoint(self, tree_size: int) -> CheckpointRecord | None:
        return self._read(lambda conn: reads.checkpoint(conn, tree_size))

    def checkpoints(self, start: int, limit: int) -> list[CheckpointRecord]:
        return self._read(lambda conn: reads.checkpoints(conn, start, 2**63 - 1, limit))

    def signing_keys(self) -> list[KeyRecord]:
        return self._read(reads.keys)

    def record_key_use(self, key: KeyRecord) -> None:
        with self.transaction() as tx:
            store.record_key_use(tx.conn, key.did, key.public_key, key.multikey, key.valid_from)

    def api_key_tenant(self, digest: bytes) -> str | None:
        return self._read(lambda conn: reads.api_key_tenant(conn, digest))

    def add_api_key(self, record: ApiKeyRecord) -> None:
        with self.transaction() as tx:
            store.add_api_key(tx.conn, record.digest, record.tenant, record.name, record.created_at)

    def api_keys(self) -> list[ApiKeyRecord]:
        return self._read(reads.api_keys)

    def revoke_api_key(self, digest: bytes) -> bool:
        with self.transaction() as tx:
            return store.revoke_api_key(tx.conn, digest)

    def log_id(self) -> str:
        return self._read(reads.log_id)

    def live_leases(self, now: int) -> int:
        return self._read(lambda conn: reads.live_leases(conn, now))

    def queued_waiters(self) -> int:
        return self._read(reads.queued_waiters)

    def live_resources(self, tenant: str, after: bytes, now: int, scan: int) -> LeaseScan:
        names = needs_names(self._names)
        return self._read(lambda conn: reads.live_resources(conn, names, tenant, after, now, scan))

    @contextmanager
    def export_snapshot(self) -> Iterator[PostgresSnapshot]:
        try:
            with connect(self.url) as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield PostgresSnapshot(conn)
        except psycopg.Error as error:
            raise StorageError(f"cannot read the ledger snapshot: {error}") from error

    def close(self) -> None:
        self._reader.close()
        self._pool.close()


def _pool(url: str, timeout: float) -> ConnectionPool[Conn]:
    pool: ConnectionPool[Conn] = ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        kwargs={
            "autocommit": True,
            "connect_timeout": CONNECT_TIMEOUT,
            "application_name": "tenure",
        },
        configure=configure,
        check=ConnectionPool.check_connection,
        timeout=timeout,
        name="tenure-writer",
        open=False,
    )
    pool.open(wait=False)
    return pool
