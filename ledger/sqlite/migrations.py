"""SQLite: the numbered steps after the first two, and the migration that runs them.

Each step runs in its own transaction and is recorded in ``PRAGMA user_version``. Step 3 seals
the names of the state tables (docs/decisions/0010): it reads every clear row, recreates the
tables with digests and sealed columns, and writes the rows back through the same translation
as every later change (``ledger/sqlite/store.py``); then the WAL is emptied and the file rebuilt.
Step 4 keeps resources and their leases in one table (docs/decisions/0013); step 5 stores its
rows in rowid order, its key an index, and step 6 keys tree nodes by their post-order position
(both docs/decisions/0016; ``ledger/sqlite/positions.py``). Step 7 keys the stored request
digests and fingerprints under the names key (``ledger/keys/rekey.py``, docs/decisions/0010).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import sqlite_utils

from ledger.changes import Change
from ledger.keys import rekey
from ledger.keys.names import NAMES_CHECK, NameCodec, check_key
from ledger.keys.unsealed import CLEAR_COLUMNS, clear_changes
from ledger.sqlite.positions import node_position
from ledger.sqlite.schema import (
    APPEND_ONLY,
    KEYED_STEP,
    MIGRATIONS,
    NAMES_STEP,
    SCHEMA_VERSION,
    SEALED_TABLES,
    STATE_TABLE,
    append_only,
)
from ledger.storage import StorageError

STATE_COLUMNS = (
    "tenant, name, token, sealed, capacity, max_token, lifecycle_end, fingerprint, result,"
    " completed_at, completed_fingerprint, owner_digest, expires_at, scope, lease_id"
)
"""Every column of ``state``, in its order (step 5 copies them all)."""


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
    for statement in SEALED_TABLES:
        conn.execute(statement)
    for change in changes:
        apply(conn, names, change)
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (NAMES_CHECK, names.check))


def one_table(conn: sqlite3.Connection) -> None:
    """Step 4 (docs/decisions/0013): the sealed ``resources`` and ``leases`` of a step-3 ledger
    become rows of ``state``, unchanged (digests and sealed blobs copied as they are). A ledger
    that reached step 3 after this step existed already has ``state`` (``SEALED_TABLES``)."""
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


def node_positions(conn: sqlite3.Connection) -> None:
    """Step 6 (docs/decisions/0016): ``tree_nodes`` keyed by ``(level, idx)`` becomes a table
    keyed by each node's post-order position (``ledger/sqlite/positions.py``), append-only as
    before; its rows are copied, their hashes unchanged."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(tree_nodes)")}
    if "level" not in columns:
        return
    conn.execute("ALTER TABLE tree_nodes RENAME TO tree_nodes_v5")
    for action in APPEND_ONLY:
        conn.execute(f"DROP TRIGGER tree_nodes_no_{action.lower()}")  # their names are reused
    _node_table(conn)
    conn.create_function("node_position", 2, node_position, deterministic=True)
    conn.execute(
        "INSERT INTO tree_nodes(pos, hash) SELECT node_position(level, idx), hash"
        " FROM tree_nodes_v5 ORDER BY 1"
    )
    conn.execute("DROP TABLE tree_nodes_v5")


def key_digests(conn: sqlite3.Connection, names: NameCodec) -> None:
    """Step 7: every stored request digest and fingerprint, keyed (``ledger/keys/rekey.py``)."""
    found = conn.execute("SELECT tenant, request_id, request_digest FROM idempotency")
    conn.executemany(
        "UPDATE idempotency SET request_digest = ? WHERE tenant = ? AND request_id = ?",
        rekey.requests(names, found.fetchall()),
    )
    found = conn.execute(
        "SELECT tenant, fingerprint, completed_fingerprint, rowid FROM state WHERE token = 0"
        " AND (fingerprint IS NOT NULL OR completed_fingerprint IS NOT NULL)"
    )
    conn.executemany(
        "UPDATE state SET fingerprint = ?, completed_fingerprint = ? WHERE rowid = ?",
        rekey.fingerprints(names, found.fetchall()),
    )
    found = conn.execute("SELECT waiter_id, tenant, call FROM waiters")
    conn.executemany(
        "UPDATE waiters SET call = ? WHERE waiter_id = ?",
        rekey.waiter_calls(names, found.fetchall()),
    )


def _node_table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE tree_nodes(pos INTEGER PRIMARY KEY, hash BLOB NOT NULL)")
    append_only(conn, "tree_nodes")


def migrate(
    conn: sqlite3.Connection, names: NameCodec | None, served: Callable[[], bool] = lambda: False
) -> int:
    """Bring the schema to SCHEMA_VERSION, each step in its own transaction; steps 3 to 5 (the
    names sealed, then the tables holding them) and 7 (digests keyed) run only with the names
    key: without it the schema stays before the first of them not yet run, and only what holds
    no names can be used. Each step reads the version inside its transaction, so two processes
    opening one folder at once run each step once. A step is never run while ``served()`` (a
    server of an older version is using the folder). The version reached is returned."""
    db = sqlite_utils.Database(conn)
    version = _version(conn)
    if version > SCHEMA_VERSION:
        raise StorageError(f"ledger schema {version} is newer than this server ({SCHEMA_VERSION})")
    steps: list[Callable[[], None] | None] = [
        lambda: MIGRATIONS[0](db),
        lambda: MIGRATIONS[1](db),
        *_keyed_steps(conn, names),
        lambda: node_positions(conn),
        None if names is None else lambda: key_digests(conn, names),
    ]
    reached = version
    while reached < len(steps) and steps[reached] is not None:
        if reached > 0 and served():
            raise StorageError(
                f"the ledger's schema is {reached} and this tenure's is {SCHEMA_VERSION}, but a"
                " running tenure of the older version serves this folder: stop it, then start"
                " this version to upgrade the ledger"
            )
        reached = _run_step(conn, steps)
    if version > 0 and (version < NAMES_STEP <= reached or version < KEYED_STEP <= reached):
        scrub(conn)
    if names is not None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (NAMES_CHECK,)).fetchone()
        check_key(names, None if row is None else str(row[0]))
    return reached


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _run_step(conn: sqlite3.Connection, steps: list[Callable[[], None] | None]) -> int:
    """Run the step the ledger is at now (another process may have run the one this process
    saw); the version reached."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        step = _version(conn)
        run = steps[step] if step < len(steps) else None
        if run is not None:
            run()
            step += 1
            conn.execute(f"PRAGMA user_version={step}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return step


def _keyed_steps(
    conn: sqlite3.Connection, names: NameCodec | None
) -> list[Callable[[], None] | None]:
    """Steps 3 to 5, or, without the names key, a gap where each would be."""
    if names is None:
        return [None, None, None]
    key = names
    return [lambda: seal_names(conn, key), lambda: one_table(conn), lambda: rowid_state(conn)]


def scrub(conn: sqlite3.Connection) -> None:
    """After the names were sealed: copy the WAL back and empty it, and rebuild the file, so
    that no page of the database or its WAL keeps a clear name."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
