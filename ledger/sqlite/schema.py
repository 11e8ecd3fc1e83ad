"""SQLite: the connection and its pragmas, the schema and its numbered migrations.

Each step runs in its own transaction and is recorded in ``PRAGMA user_version``. Step 3 seals
the names of the state tables (docs/decisions/0010): it reads every clear row, recreates the
tables with digests and sealed columns, and writes the rows back through the same translation
as every later change (``ledger/sqlite/store.py``); then the WAL is emptied and the file rebuilt.
Step 4 keeps resources and their leases in one table (docs/decisions/0013); step 5 stores its
rows in rowid order, its key an index (docs/decisions/0016).
``secure_delete`` is always on, so freed pages never keep an old value.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from ledger.changes import Change
from ledger.names import NAMES_CHECK, NameCodec, check_key
from ledger.sealing import CLEAR_COLUMNS, clear_changes
from ledger.storage import StorageError

SCHEMA_VERSION = 5
NAMES_STEP = 3
"""The step that seals names (docs/decisions/0010): it needs the names key to run."""
DB_NAME = "tenure.db"


# The sqlite3 module binds int, float, str and bytearray parameters directly, but looks up an
# adapter for every other one — bytes and None included — and, finding none, raises and clears
# an AttributeError per parameter: ~40% of binding a digest, ~12 per lease event (issue 10).
# Registered adapters that return the value unchanged bind exactly the same BLOB or NULL; both
# are C calls (``bytes.__bytes__`` returns an exact bytes object itself, and a lookup in an
# empty dict answers None), a Python function would cost a frame per parameter.
_NOTHING: dict[object, None] = {}
sqlite3.register_adapter(bytes, bytes.__bytes__)
sqlite3.register_adapter(type(None), _NOTHING.get)


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: no old names linger
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

_SEALED_TABLES = (
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


def seal_names(conn: sqlite3.Connection, names: NameCodec) -> None:
    """Step 3 (docs/decisions/0010): every clear row of the state tables is read, the tables
    are recreated with digests and sealed columns, and the rows written again as changes."""
    from ledger.sqlite.store import apply  # the store's translation is the one of every write

    changes: list[Change] = []
    for table, columns in CLEAR_COLUMNS.items():
        order = " ORDER BY seq" if table == "waiters" else ""
        rows = conn.execute(f"SELECT {columns} FROM {table}{order}").fetchall()
        changes.extend(clear_changes(table, rows))
        conn.execute(f"DROP TABLE {table}")
    for statement in _SEALED_TABLES:
        conn.execute(statement)
    for change in changes:
        apply(conn, names, change)
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (NAMES_CHECK, names.check))


def one_table(conn: sqlite3.Connection) -> None:
    """Step 4 (docs/decisions/0013): the sealed ``resources`` and ``leases`` of a step-3 ledger
    become rows of ``state``, unchanged (digests and sealed blobs copied as they are). A ledger
    that reached step 3 after this step existed already has ``state`` (``_SEALED_TABLES``)."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "resources" not in tables:
        return
    for statement in STATE_TABLE:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO state(tenant, name, token, sealed, capacity, max_token, lifecycle_end,"
        " fingerprint, result, completed_at, completed_fingerprint) SELECT tenant, name, 0,"
        " sealed, capacity, max_token, lifecycle_end, fingerprint, result, completed_at,"
        " completed_fingerprint FROM resources"
    )
    conn.execute(
        "INSERT INTO state(tenant, name, token, sealed, owner_digest, expires_at, scope,"
        " lease_id) SELECT tenant, resource, fencing_token, sealed, owner_digest, expires_at,"
        " scope, lease_id FROM leases"
    )
    conn.execute("DROP TABLE leases")
    conn.execute("DROP TABLE resources")


def rowid_state(conn: sqlite3.Connection) -> None:
    """Step 5 (docs/decisions/0016): a step-4 ``state`` (a WITHOUT ROWID table) is copied, row
    for row, into the rowid table :data:`STATE_TABLE` makes now, and dropped."""
    made = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'state'")
    row = made.fetchone()
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return
    conn.execute("ALTER TABLE state RENAME TO state_v4")
    for index in ("state_lifecycle_end", "state_expires_at", "state_scope"):
        conn.execute(f"DROP INDEX {index}")  # its name is the new table's
    for statement in STATE_TABLE:
        conn.execute(statement)
    conn.execute(f"INSERT INTO state({STATE_COLUMNS}) SELECT {STATE_COLUMNS} FROM state_v4")
    conn.execute("DROP TABLE state_v4")


STATE_COLUMNS = (
    "tenant, name, token, sealed, capacity, max_token, lifecycle_end, fingerprint, result,"
    " completed_at, completed_fingerprint, owner_digest, expires_at, scope, lease_id"
)


def migrate(conn: sqlite3.Connection, names: NameCodec | None) -> int:
    """Bring the schema to SCHEMA_VERSION, each step in its own transaction; the step that
    seals names runs only with the names key (without it the schema stays before that step, and
    only what holds no names can be used). The version reached is returned."""
    db = sqlite_utils.Database(conn)
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StorageError(f"ledger schema {version} is newer than this server ({SCHEMA_VERSION})")
    steps: list[Callable[[], None]] = [lambda: _v1(db), lambda: _v2(db)]
    if names is not None:  # steps 3 (sealing names), 4 and 5 run only with the names key
        steps += [lambda: seal_names(conn, names), lambda: one_table(conn)]
        steps += [lambda: rowid_state(conn)]
    for step in range(version, len(steps)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            steps[step]()
            conn.execute(f"PRAGMA user_version={step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    if version < NAMES_STEP <= len(steps) and version > 0:
        scrub(conn)
    if names is not None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (NAMES_CHECK,)).fetchone()
        check_key(names, None if row is None else str(row[0]))
    return max(version, len(steps))


def scrub(conn: sqlite3.Connection) -> None:
    """After the names were sealed: copy the WAL back and empty it, and rebuild the file, so
    that no page of the database or its WAL keeps a clear name."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def open_db(data_dir: Path, names: NameCodec | None) -> tuple[sqlite3.Connection, int]:
    """Open (creating if needed) the ledger, private to its owner: the folder 0700, the database
    and its WAL and shared-memory files 0600; the schema version reached is returned."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    path = data_dir / DB_NAME
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = connect(path)
    version = migrate(conn, names)
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(data_dir / name, 0o600)
    return conn, version
