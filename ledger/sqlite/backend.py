"""``SQLiteStorage``: the storage Protocol over one SQLite file (WAL, ``synchronous=FULL``).

Two connections: the writer, used by :meth:`SQLiteStorage.transaction` (the group committer's
thread, and start-up), and the reader of the loop thread, which in WAL mode sees only committed
data and never blocks the writer. An export snapshot gets its own connection and read transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ledger import metrics
from ledger.changes import Change
from ledger.keys import sealing
from ledger.keys.names import NameCodec, needs_names
from ledger.sqlite.checkpointer import Checkpointer
from ledger.sqlite.opening import open_db
from ledger.sqlite.pending import PendingWrites
from ledger.sqlite.reads import LoopReads, SnapshotReads, StateReads
from ledger.sqlite.schema import DB_NAME, NAMES_STEP, connect
from ledger.sqlite.store import apply
from ledger.sqlite.writelock import WriteLock
from ledger.storage import (
    ApiKeyRecord,
    KeyRecord,
    StorageError,
)


def exists(data_dir: Path) -> bool:
    return (data_dir / DB_NAME).is_file()


class SQLiteTransaction(StateReads):
    """One ``BEGIN IMMEDIATE`` transaction of the writer connection.

    The hot changes are held back (``ledger/sqlite/pending.py``) and written, a few statements
    per table, before the transaction next reads and when it commits (:meth:`flush`).
    """

    def __init__(self, conn: sqlite3.Connection, names: NameCodec | None) -> None:
        self._conn = conn
        self._names_or_none = names
        self._pending = PendingWrites()

    def _codec(self) -> NameCodec:
        return needs_names(self._names_or_none)

    def _reading(self) -> sqlite3.Connection:
        self._pending.flush(self._conn)
        return self._conn

    def apply(self, change: Change) -> None:
        names = self._names_or_none or self._codec()  # the codec only to raise
        if not self._pending.add(names, change):
            self.flush()
            apply(self._conn, names, change)

    def flush(self) -> None:
        """Write the held-back changes: every read sees them, and the commit makes them durable."""
        self._pending.flush(self._conn)

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        return self._codec().keyed(kind, tenant, value)


class SQLiteSnapshot(SnapshotReads):
    """A deferred read transaction: its first read fixes what every later read sees."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _reading(self) -> sqlite3.Connection:
        return self._conn


class SQLiteStorage(LoopReads):
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

    def _reading(self) -> sqlite3.Connection:
        return self._reader

    def _codec(self) -> NameCodec:
        return needs_names(self._names)

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

    def add_api_key(self, record: ApiKeyRecord) -> None:
        with self.transaction():
            self._writer.execute(
                "INSERT INTO api_keys(key_digest, tenant, name, created_at) VALUES (?, ?, ?, ?)",
                (record.digest, record.tenant, record.name, record.created_at),
            )

    def revoke_api_key(self, digest: bytes) -> bool:
        with self.transaction():
            sql = "DELETE FROM api_keys WHERE key_digest = ?"
            return self._writer.execute(sql, (digest,)).rowcount > 0

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
