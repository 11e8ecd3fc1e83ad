"""SQLite: the connection and its pragmas, schema and migrations, and the change→SQL translation.

The ledger is one SQLite file in WAL mode with ``synchronous=FULL``: a commit returns only after
the WAL is fsynced. The group committer (``ledger/committer.py``) hands every batch queued since
its last commit to one write transaction (``ledger/sqlite/backend.py``), where :func:`apply`
translates each typed change (``ledger/changes.py``) to a prepared statement.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from ledger.changes import (
    AddWaiter,
    AppendEntry,
    ArmDeadMan,
    Change,
    DisarmDeadMan,
    DropLease,
    DropWaiter,
    DropWorkerWaiters,
    ForgetRequests,
    GrantWaiter,
    PutCheckpoint,
    PutLease,
    PutNodes,
    PutResource,
    RememberRequest,
    SetLeaseExpiry,
    row,
)
from ledger.storage import StorageError

SCHEMA_VERSION = 2
DB_NAME = "tenure.db"


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def _v1(db: sqlite_utils.Database) -> None:
    db.table("entries").create({"idx": int, "leaf": bytes}, pk="idx", not_null={"leaf"})
    db.execute(
        "CREATE TABLE tree_nodes(level INTEGER NOT NULL, idx INTEGER NOT NULL, "
        "hash BLOB NOT NULL, PRIMARY KEY(level, idx)) WITHOUT ROWID"
    )
    for table in ("entries", "tree_nodes"):
        for action in ("UPDATE", "DELETE"):
            db.execute(
                f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )
    db.execute(
        "CREATE TABLE resources(tenant TEXT NOT NULL, name TEXT NOT NULL,"
        " capacity INTEGER NOT NULL, max_token INTEGER NOT NULL, lifecycle_end INTEGER,"
        " fingerprint BLOB, result TEXT, completed_at INTEGER, completed_fingerprint BLOB,"
        " PRIMARY KEY(tenant, name)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE leases(tenant TEXT NOT NULL, resource TEXT NOT NULL,"
        " fencing_token INTEGER NOT NULL, holder TEXT NOT NULL, owner_digest BLOB NOT NULL,"
        " expires_at INTEGER NOT NULL, scope TEXT, lease_id INTEGER NOT NULL,"
        " PRIMARY KEY(tenant, resource, fencing_token)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE idempotency(tenant TEXT NOT NULL, request_id TEXT NOT NULL,"
        " request_digest BLOB NOT NULL, answer TEXT NOT NULL, created_at INTEGER NOT NULL,"
        " PRIMARY KEY(tenant, request_id)) WITHOUT ROWID"
    )
    db.table("idempotency").create_index(["created_at"])
    db.execute(
        "CREATE TABLE scopes(tenant TEXT NOT NULL, scope TEXT NOT NULL, dead_ms INTEGER NOT NULL,"
        " last_beat INTEGER NOT NULL, PRIMARY KEY(tenant, scope)) WITHOUT ROWID"
    )
    db.table("signing_keys").create(
        {"did": str, "public_key": bytes, "multikey": str, "valid_from": int, "valid_until": int},
        pk="did",
        not_null={"public_key", "multikey", "valid_from"},
    )
    db.table("checkpoints").create(
        {"tree_size": int, "root_hash": bytes, "timestamp": int, "note": str, "key_did": str},
        pk="tree_size",
        not_null={"root_hash", "timestamp", "note", "key_did"},
    )
    db.table("meta").create({"key": str, "value": str}, pk="key", not_null={"value"})
    db.execute("INSERT INTO meta VALUES ('log_id', lower(hex(randomblob(8))))")
    db.table("api_keys").create(
        {"key_digest": bytes, "tenant": str, "name": str, "created_at": int},
        pk="key_digest",
        not_null={"tenant", "name", "created_at"},
    )


def _v2(db: sqlite_utils.Database) -> None:
    """The indexes the sweeper and scopes query by (docs/decisions/0006): nothing of it is
    kept in memory any more."""
    db.execute("CREATE INDEX leases_expires_at ON leases(expires_at)")
    db.execute("CREATE INDEX leases_scope ON leases(tenant, scope) WHERE scope IS NOT NULL")
    db.execute("CREATE INDEX scopes_deadline ON scopes(last_beat + dead_ms)")
    db.execute(
        "CREATE INDEX resources_lifecycle_end ON resources(lifecycle_end)"
        " WHERE lifecycle_end IS NOT NULL"
    )
    db.execute(
        "CREATE TABLE waiters(seq INTEGER PRIMARY KEY AUTOINCREMENT, waiter_id TEXT NOT NULL"
        " UNIQUE, tenant TEXT NOT NULL, resource TEXT NOT NULL, worker TEXT NOT NULL,"
        " call TEXT NOT NULL, answer TEXT)"
    )
    db.execute("CREATE INDEX waiters_queue ON waiters(tenant, resource, seq)")
    db.execute("CREATE INDEX waiters_worker ON waiters(worker)")


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION, each step in its own transaction."""
    db = sqlite_utils.Database(conn)
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StorageError(f"ledger schema {version} is newer than this server ({SCHEMA_VERSION})")
    for step in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[step](db)
            conn.execute(f"PRAGMA user_version={step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def open_db(data_dir: Path) -> sqlite3.Connection:
    """Open (creating if needed) the ledger, private to its owner: the folder 0700, the database
    and its WAL and shared-memory files 0600 (they hold names and request ids)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    path = data_dir / DB_NAME
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = connect(path)
    migrate(conn)
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(data_dir / name, 0o600)
    return conn


_LEASE_KEY = "WHERE tenant = ? AND resource = ? AND fencing_token = ?"


def apply(conn: sqlite3.Connection, change: Change) -> None:
    """The SQLite translation of one change (ledger/changes.py), inside the caller's transaction."""
    match change:
        case AppendEntry():
            conn.execute(
                "INSERT INTO entries(idx, leaf) VALUES (?, ?)", (change.index, change.leaf)
            )
        case PutNodes():
            conn.executemany(
                "INSERT INTO tree_nodes(level, idx, hash) VALUES (?, ?, ?)", change.nodes
            )
        case PutResource():
            conn.execute(
                "INSERT OR REPLACE INTO resources(tenant, name, capacity, max_token, lifecycle_end,"
                " fingerprint, result, completed_at, completed_fingerprint)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row(change),
            )
        case PutLease():
            conn.execute(
                "INSERT INTO leases(tenant, resource, fencing_token, holder, owner_digest,"
                " expires_at, scope, lease_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row(change),
            )
        case DropLease():
            conn.execute(f"DELETE FROM leases {_LEASE_KEY}", row(change))
        case SetLeaseExpiry():
            key = (change.tenant, change.resource, change.fencing_token)
            conn.execute(
                f"UPDATE leases SET expires_at = ? {_LEASE_KEY}", (change.expires_at, *key)
            )
        case _:
            _apply_rare(conn, change)


def _apply_rare(conn: sqlite3.Connection, change: Change) -> None:
    match change:
        case RememberRequest():
            sql = "INSERT OR REPLACE INTO idempotency(tenant, request_id, request_digest, answer,"
            conn.execute(sql + " created_at) VALUES (?, ?, ?, ?, ?)", row(change))
        case ForgetRequests():
            conn.execute("DELETE FROM idempotency WHERE created_at < ?", (change.before,))
        case ArmDeadMan():
            sql = "INSERT OR REPLACE INTO scopes(tenant, scope, dead_ms, last_beat)"
            conn.execute(sql + " VALUES (?, ?, ?, ?)", row(change))
        case DisarmDeadMan():
            conn.execute("DELETE FROM scopes WHERE tenant = ? AND scope = ?", row(change))
        case PutCheckpoint():
            sql = (
                "INSERT OR IGNORE INTO checkpoints(tree_size, root_hash, timestamp, note, key_did)"
            )
            conn.execute(sql + " VALUES (?, ?, ?, ?, ?)", row(change))
        case _:
            _apply_waiters(conn, change)


def _apply_waiters(conn: sqlite3.Connection, change: Change) -> None:
    match change:
        case AddWaiter():
            sql = "INSERT INTO waiters(waiter_id, tenant, resource, worker, call)"
            conn.execute(sql + " VALUES (?, ?, ?, ?, ?)", row(change))
        case GrantWaiter():
            sql = "UPDATE waiters SET answer = ? WHERE waiter_id = ?"
            conn.execute(sql, (change.answer, change.waiter_id))
        case DropWaiter():
            conn.execute("DELETE FROM waiters WHERE waiter_id = ?", row(change))
        case DropWorkerWaiters():
            conn.execute("DELETE FROM waiters WHERE worker = ?", row(change))
        case _:
            raise TypeError(f"no SQLite translation for {change!r}")
