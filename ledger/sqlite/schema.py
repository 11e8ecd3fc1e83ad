"""SQLite: the connection and its pragmas, and the tables each numbered step makes (the steps
after the first two, and the migration that runs them: ``ledger/sqlite/migrations.py``).
``secure_delete`` is always on, so freed pages never keep an old value.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from ledger.sqlite.readahead import read_at_random

SCHEMA_VERSION = 7
NAMES_STEP = 3
"""The step that seals names (docs/decisions/0010): it needs the names key to run."""
KEYED_STEP = 7
"""The step that keys request digests and fingerprints (0010's addendum): it needs it too."""
DB_NAME = "tenure.db"


# The sqlite3 module binds int, float, str and bytearray parameters directly, but looks up an
# adapter for every other one — bytes and None included — and, finding none, raises and clears
# an AttributeError per parameter: ~40% of binding a digest (docs/performance.md).
# Registered adapters that return the value unchanged bind exactly the same BLOB or NULL; both
# are C calls (``bytes.__bytes__`` returns an exact bytes object itself, and a lookup in an
# empty dict answers None), a Python function would cost a frame per parameter.
_NOTHING: dict[object, None] = {}
sqlite3.register_adapter(bytes, bytes.__bytes__)
sqlite3.register_adapter(type(None), _NOTHING.get)


def connect(path: Path) -> sqlite3.Connection:
    """A read-write connection to the ledger at ``path``, its WAL open, read without readahead
    (``ledger/sqlite/readahead.py``): a scan of the log (an export, a monitor catching up) must
    not leave the pages the writers rewrite cached in large folios (docs/decisions/0046)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    read_at_random(path)  # before any statement (ledger/sqlite/readahead.py)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: no old names linger
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=5000")
    read_at_random(path.with_name(path.name + "-wal"))  # opened by the first statement
    return conn


APPEND_ONLY = ("UPDATE", "DELETE")


def append_only(conn: sqlite3.Connection, table: str) -> None:
    """Triggers that refuse to change or remove a row of ``table``."""
    for action in APPEND_ONLY:
        conn.execute(
            f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
        )


def _v1(db: sqlite_utils.Database) -> None:
    db.table("entries").create({"idx": int, "leaf": bytes}, pk="idx", not_null={"leaf"})
    db.execute(
        "CREATE TABLE tree_nodes(level INTEGER NOT NULL, idx INTEGER NOT NULL, "
        "hash BLOB NOT NULL, PRIMARY KEY(level, idx)) WITHOUT ROWID"
    )
    for table in ("entries", "tree_nodes"):
        append_only(db.conn, table)
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
"""The steps that need no key; :data:`NAMES_STEP` follows them."""

STATE_TABLE = (
    "CREATE TABLE state(tenant BLOB NOT NULL, name BLOB NOT NULL, token INTEGER NOT NULL,"
    " sealed BLOB NOT NULL, capacity INTEGER, max_token INTEGER, lifecycle_end INTEGER,"
    " fingerprint BLOB, result BLOB, completed_at INTEGER, completed_fingerprint BLOB,"
    " owner_digest BLOB, expires_at INTEGER, scope BLOB, lease_id INTEGER,"
    " CHECK (token > 0 OR (capacity IS NOT NULL AND max_token IS NOT NULL)),"
    " CHECK (token = 0 OR (owner_digest IS NOT NULL AND expires_at IS NOT NULL"
    " AND lease_id IS NOT NULL)),"
    " PRIMARY KEY(tenant, name, token))",
    "CREATE INDEX state_lifecycle_end ON state(lifecycle_end) WHERE lifecycle_end IS NOT NULL",
    "CREATE INDEX state_expires_at ON state(expires_at) WHERE token > 0",
    "CREATE INDEX state_scope ON state(tenant, scope) WHERE scope IS NOT NULL",
)
"""Step 4's one table of resources and their leases (docs/decisions/0013): a resource's row at
``token`` 0, each live lease's at its fencing token, all keyed by the resource's digests — so a
grant's two keys share one leaf page of the key's index, where two tables cost a page each.
Since step 5 (docs/decisions/0016) the rows themselves are stored in rowid order, appended,
and the key is an index of its own: a random key's page holds ~80 keys, where it held ~26
whole rows and split three times as often."""

SEALED_TABLES = (
    *STATE_TABLE,
    "CREATE TABLE idempotency(tenant BLOB NOT NULL, request_id BLOB NOT NULL,"
    " request_digest BLOB NOT NULL, answer BLOB NOT NULL, created_at INTEGER NOT NULL,"
    " PRIMARY KEY(tenant, request_id)) WITHOUT ROWID",
    "CREATE INDEX idempotency_created_at ON idempotency(created_at)",
    "CREATE TABLE scopes(tenant BLOB NOT NULL, scope BLOB NOT NULL, sealed BLOB NOT NULL,"
    " dead_ms INTEGER NOT NULL, last_beat INTEGER NOT NULL, PRIMARY KEY(tenant, scope))"
    " WITHOUT ROWID",
    "CREATE INDEX scopes_deadline ON scopes(last_beat + dead_ms)",
    "CREATE TABLE waiters(seq INTEGER PRIMARY KEY AUTOINCREMENT, waiter_id TEXT NOT NULL"
    " UNIQUE, tenant BLOB NOT NULL, resource BLOB NOT NULL, worker TEXT NOT NULL,"
    " call BLOB NOT NULL, answer BLOB)",
    "CREATE INDEX waiters_queue ON waiters(tenant, resource, seq)",
    "CREATE INDEX waiters_worker ON waiters(worker)",
)
