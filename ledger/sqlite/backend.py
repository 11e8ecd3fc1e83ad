"""``SQLiteStorage``: the storage Protocol over one SQLite file (WAL, ``synchronous=FULL``).

Two connections: the writer, used by :meth:`SQLiteStorage.transaction` (the group committer's
thread, and start-up), and the reader of the loop thread, which in WAL mode sees only committed
data and never blocks the writer. An export snapshot gets its own connection and read transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ledger import metrics, sealing
from ledger.changes import Change
from ledger.leases import Resource
from ledger.names import NameCodec, needs_names
from ledger.sqlite import reads
from ledger.sqlite.checkpointer import Checkpointer
from ledger.sqlite.opening import open_db
from ledger.sqlite.pending import PendingWrites
from ledger.sqlite.schema import DB_NAME, NAMES_STEP, connect
from ledger.sqlite.store import apply
from ledger.sqlite.writelock import WriteLock
from ledger.storage import (
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    RequestRecord,
    StorageError,
    WaiterRecord,
)


def exists(data_dir: Path) -> bool:
    return (data_dir / DB_NAME).is_file()


class SQLiteTransaction:
    """One ``BEGIN IMMEDIATE`` transaction of the writer connection.

    The hot changes are held back (``ledger/sqlite/pending.py``) and written, a few statements
    per table, before the transaction next reads and when it commits (:meth:`flush`).
    """

    def __init__(self, conn: sqlite3.Connection, names: NameCodec | None) -> None:
        self._conn = conn
        self._names_or_none = names
        self._pending = PendingWrites()

    @property
    def _names(self) -> NameCodec:
        return needs_names(self._names_or_none)

    def apply(self, change: Change) -> None:
        names = self._names_or_none or self._names  # the property only to raise
        if not self._pending.add(names, change):
            self.flush()
            apply(self._conn, names, change)

    def flush(self) -> None:
        """Write the held-back changes: every read sees them, and the commit makes them durable."""
        self._pending.flush(self._conn)

    def _reading(self) -> sqlite3.Connection:
        self._pending.flush(self._conn)
        return self._conn

    def tree_size(self) -> int:
        return reads.tree_size(self._reading())

    def node(self, level: int, index: int) -> bytes:
        return reads.node(self._reading(), level, index)

    def entry(self, index: int) -> bytes | None:
        return reads.entry(self._reading(), index)

    def resource(self, tenant: str, name: str) -> Resource | None:
        return reads.resource(self._reading(), self._names, tenant, name)

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        return reads.resources(self._reading(), self._names, keys)

    def request(self, tenant: str, request_id: str) -> RequestRecord | None:
        return reads.request(self._reading(), self._names, tenant, request_id)

    def api_key_tenant(self, digest: bytes) -> str | None:
        return reads.api_key_tenant(self._reading(), digest)

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        return self._names.keyed(kind, tenant, value)

    def expired_leases(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.expired_leases(self._reading(), self._names, now, limit)

    def ended_lifecycles(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.ended_lifecycles(self._reading(), self._names, now, limit)

    def due_scopes(self, now: int, limit: int) -> list[tuple[str, str]]:
        return reads.due_scopes(self._reading(), self._names, now, limit)

    def scope_resources(self, tenant: str, scope: str) -> list[str]:
        return reads.scope_resources(self._reading(), self._names, tenant, scope)

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        return reads.waiters(self._reading(), self._names, tenant, resource)

    def waiter(self, waiter_id: str) -> WaiterRecord | None:
        return reads.waiter(self._reading(), self._names, waiter_id)

    def waiter_workers(self) -> list[str]:
        return reads.waiter_workers(self._reading())


class SQLiteSnapshot:
    """A deferred read transaction: its first read fixes what every later read sees."""

    def __init__(self, conn: sqlite3.Connection) -> None:
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
        return reads.entries(self._conn, 0, end)

    def checkpoints(self, up_to: int) -> Iterator[CheckpointRecord]:
        return reads.checkpoints(self._conn, 0, up_to)

    def latest_checkpoint(self) -> CheckpointRecord | None:
        return reads.latest_checkpoint(self._conn)


class SQLiteStorage:
    """The ledger in ``<data_dir>/tenure.db``.

    Writers are serialized across threads and processes by the ledger's write lock
    (``ledger/sqlite/writelock.py``, docs/decisions/0006), taken before ``BEGIN IMMEDIATE`` and
    released after COMMIT. The WAL is checkpointed outside it, by a thread the first write
    starts (``ledger/sqlite/checkpointer.py``).
    """

    def __init__(
        self,
        path: Path,
        writer: sqlite3.Connection,
        reader: sqlite3.Connection,
        names: NameCodec | None = None,
    ):
        self.path = path
        self._names = names
        self._writer = writer
        self._reader = reader
        self._lock = WriteLock(path.parent)
        self._checkpointer: Checkpointer | None = None

    @classmethod
    def open(cls, data_dir: Path, names: NameCodec | None = None) -> SQLiteStorage:
        """Open (creating and migrating if needed; sealing names needs ``names``); a ledger that
        cannot be opened raises :class:`StorageError` saying why."""
        try:
            writer, version = open_db(data_dir, names)
            # The writer's statement journals (the old images of the pages one multi-row INSERT
            # changes, to undo it alone) stay in memory: past 64 KiB one spilled to a file made
            # and unlinked in the temp folder — once per batch of fresh grants, half of a
            # worker's pwrites (docs/performance.md, thirteenth round). A batch's are bounded by
            # its rows; migrations and VACUUM, whose grow with the ledger, ran before this.
            writer.execute("PRAGMA temp_store=MEMORY")
            sealed = names if version >= NAMES_STEP else None
            return cls(data_dir / DB_NAME, writer, connect(data_dir / DB_NAME), sealed)
        except sqlite3.Error as error:
            raise StorageError(f"cannot open the ledger in {data_dir}: {error}") from error

    def check_writable(self) -> None:
        """Take and drop the write lock: raises :class:`StorageError` on a read-only ledger."""
        try:
            self._writer.execute("BEGIN IMMEDIATE")
            self._writer.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise StorageError(f"cannot write the ledger: {error}") from error

    @contextmanager
    def transaction(self) -> Iterator[SQLiteTransaction]:
        conn = self._writer
        with self._lock.held():
            if self._checkpointer is None:
                self._start_checkpointer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                tx = SQLiteTransaction(conn, self._names)
                yield tx
                tx.flush()
                started = time.perf_counter()
                conn.execute("COMMIT")
                committed = time.perf_counter() - started
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        metrics.sqlite_committed(committed)  # after the lock: the next writer need not wait

    def turns(self) -> WriteLock:
        return self._lock

    def _start_checkpointer(self) -> None:
        """The first write turns the writer's automatic checkpoint off and starts checkpoints
        outside the write lock (``ledger/sqlite/checkpointer.py``)."""
        self._writer.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer = Checkpointer(self.path, self._lock.held)
        self._checkpointer.start()

    def warm_lease(self, tenant: str, resource: str, holder: str | None, scope: str | None) -> None:
        if self._names is not None:
            sealing.warm_lease(self._names, tenant, resource, holder, scope)

    def tree_size(self) -> int:
        return reads.tree_size(self._reader)

    def node(self, level: int, index: int) -> bytes:
        return reads.node(self._reader, level, index)

    def entry(self, index: int) -> bytes | None:
        return reads.entry(self._reader, index)

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        return list(reads.entries(self._reader, start, end))

    def latest_checkpoint(self) -> CheckpointRecord | None:
        return reads.latest_checkpoint(self._reader)

    def checkpoint(self, tree_size: int) -> CheckpointRecord | None:
        return reads.checkpoint(self._reader, tree_size)

    def checkpoints(self, start: int, limit: int) -> list[CheckpointRecord]:
        return list(reads.checkpoints(self._reader, start, 2**63 - 1, limit))

    def signing_keys(self) -> list[KeyRecord]:
        return reads.keys(self._reader)

    def record_key_use(self, key: KeyRecord) -> None:
        with self.transaction():
            self._writer.execute(
                "UPDATE signing_keys SET valid_until = ? WHERE valid_until IS NULL AND did != ?",
                (key.valid_from, key.did),
            )
            self._writer.execute(
                "INSERT OR IGNORE INTO signing_keys(did, public_key, multikey, valid_from,"
                " valid_until) VALUES (?, ?, ?, ?, NULL)",
                (key.did, key.public_key, key.multikey, key.valid_from),
            )

    def api_key_tenant(self, digest: bytes) -> str | None:
        return reads.api_key_tenant(self._reader, digest)

    def add_api_key(self, record: ApiKeyRecord) -> None:
        with self.transaction():
            self._writer.execute(
                "INSERT INTO api_keys(key_digest, tenant, name, created_at) VALUES (?, ?, ?, ?)",
                (record.digest, record.tenant, record.name, record.created_at),
            )

    def api_keys(self) -> list[ApiKeyRecord]:
        return reads.api_keys(self._reader)

    def revoke_api_key(self, digest: bytes) -> bool:
        with self.transaction():
            sql = "DELETE FROM api_keys WHERE key_digest = ?"
            return self._writer.execute(sql, (digest,)).rowcount > 0

    def log_id(self) -> str:
        return reads.log_id(self._reader)

    def live_leases(self, now: int) -> int:
        return reads.live_leases(self._reader, now)

    def queued_waiters(self) -> int:
        return reads.queued_waiters(self._reader)

    @contextmanager
    def export_snapshot(self) -> Iterator[SQLiteSnapshot]:
        conn = connect(self.path)
        try:
            conn.execute("BEGIN")  # deferred: the first read fixes the snapshot
            yield SQLiteSnapshot(conn)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def close(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.close()
        self._reader.close()
        self._writer.close()
        self._lock.close()
