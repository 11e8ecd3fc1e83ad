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

from ledger.changes import Change
from ledger.keys import sealing
from ledger.keys.names import NameCodec, needs_names
from ledger.lease.leases import Resource
from ledger.postgres import store
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
from ledger.postgres.reads import LoopReads, SnapshotReads, StateReads
from ledger.postgres.schema import NAMES_STEP, has_ledger, migrate
from ledger.storage import (
    ApiKeyRecord,
    KeyRecord,
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


class PostgresTransaction(StateReads):
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

    def _run(self, read: Callable[[Conn], T]) -> T:
        return read(self.conn)

    def _codec(self) -> NameCodec:
        return needs_names(self._names_or_none)

    def flush(self) -> None:
        """Send the held-back writes (pipelined: nothing is waited for)."""
        self._group.flush()

    def apply(self, change: Change) -> None:
        if not self._group.hold(change):
            store.apply(self.conn, self._codec(), change)

    def tree_size(self) -> int:
        return self._group.size

    def node(self, level: int, index: int) -> bytes:
        found = self._group.node(level, index)
        return super().node(level, index) if found is None else found

    def entry(self, index: int) -> bytes | None:
        found = self._group.last_entry(index)
        return super().entry(index) if found is None else found

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        return self._group.resources(keys)

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        return self._codec().keyed(kind, tenant, value)

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        if self._group.quiet(tenant, resource):
            return []
        return super().waiters(tenant, resource)


class PostgresSnapshot(SnapshotReads):
    """A REPEATABLE READ READ ONLY transaction: every read sees the database as of its first."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def _run(self, read: Callable[[Conn], T]) -> T:
        return read(self._conn)


class PostgresStorage(LoopReads):
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

    def _run(self, read: Callable[[Conn], T]) -> T:
        return self._reader.run(read)

    def _codec(self) -> NameCodec:
        return needs_names(self._names)

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        if self._names is not None:
            sealing.warm_lease(self._names, tenant, resource, holder, scope)
            self._ahead.note(tenant, resource)  # read with the lock, in its round trip

    def record_key_use(self, key: KeyRecord) -> None:
        with self.transaction() as tx:
            store.record_key_use(tx.conn, key.did, key.public_key, key.multikey, key.valid_from)

    def add_api_key(self, record: ApiKeyRecord) -> None:
        with self.transaction() as tx:
            store.add_api_key(tx.conn, record.digest, record.tenant, record.name, record.created_at)

    def revoke_api_key(self, digest: bytes) -> bool:
        with self.transaction() as tx:
            return store.revoke_api_key(tx.conn, digest)

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
