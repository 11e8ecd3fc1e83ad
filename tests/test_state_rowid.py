"""Schema step 5 (docs/decisions/0016): ``state``'s rows are stored in rowid order, its key an
index — and a ledger written before it, with a WITHOUT ROWID ``state``, moves over when a server
opens it, every row, sealed name, result, scope and fencing token carrying on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger.backends import open_storage
from ledger.sqlite.migrations import STATE_COLUMNS
from ledger.sqlite.schema import DB_NAME, SCHEMA_VERSION
from tests.names_key import NAMES, unkeyed_fingerprints
from tests.test_state_table import START, _resources, _write_some, carry_on

STEP_4_STATE = (
    "CREATE TABLE state(tenant BLOB NOT NULL, name BLOB NOT NULL, token INTEGER NOT NULL,"
    " sealed BLOB NOT NULL, capacity INTEGER, max_token INTEGER, lifecycle_end INTEGER,"
    " fingerprint BLOB, result BLOB, completed_at INTEGER, completed_fingerprint BLOB,"
    " owner_digest BLOB, expires_at INTEGER, scope BLOB, lease_id INTEGER,"
    " CHECK (token > 0 OR (capacity IS NOT NULL AND max_token IS NOT NULL)),"
    " CHECK (token = 0 OR (owner_digest IS NOT NULL AND expires_at IS NOT NULL"
    " AND lease_id IS NOT NULL)),"
    " PRIMARY KEY(tenant, name, token)) WITHOUT ROWID",
    "CREATE INDEX state_lifecycle_end ON state(lifecycle_end) WHERE lifecycle_end IS NOT NULL",
    "CREATE INDEX state_expires_at ON state(expires_at) WHERE token > 0",
    "CREATE INDEX state_scope ON state(tenant, scope) WHERE scope IS NOT NULL",
)
"""``state`` as schema step 4 made it, before step 5 existed."""


def _back_to_step_4(path: Path) -> None:
    """Rewrite a ledger's ``state`` as step 4 stored it: the same rows, WITHOUT ROWID."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE state RENAME TO state_v5")
    for index in ("state_lifecycle_end", "state_expires_at", "state_scope"):
        conn.execute(f"DROP INDEX {index}")
    for statement in STEP_4_STATE:
        conn.execute(statement)
    conn.execute(f"INSERT INTO state({STATE_COLUMNS}) SELECT {STATE_COLUMNS} FROM state_v5")
    conn.execute("DROP TABLE state_v5")
    unkeyed_fingerprints(conn, "state", "f")
    conn.execute("PRAGMA user_version = 4")
    conn.execute("COMMIT")
    conn.close()


def _state_sql(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'state'").fetchone()
        return str(sql)


def test_a_step_4_ledger_moves_its_rows_into_rowid_order_and_carries_on(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, names=NAMES)
    _write_some(storage)
    before = _resources(storage)
    storage.close()
    _back_to_step_4(tmp_path / DB_NAME)
    assert "WITHOUT ROWID" in _state_sql(tmp_path / DB_NAME)

    storage = open_storage(tmp_path, names=NAMES)
    try:
        assert "WITHOUT ROWID" not in _state_sql(tmp_path / DB_NAME)
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            assert "state_v4" not in names
            assert {"state_expires_at", "state_scope", "state_lifecycle_end"} <= names
        assert _resources(storage) == before  # every row, its sealed names and result opened
        with storage.transaction() as tx:
            assert tx.scope_resources("t", "job-1") == ["solo"]
            due = list(tx.expired(START + 10**9, 10))
            assert sorted(due) == [("t", "pool"), ("t", "solo"), ("u", "solo")]
        carry_on(storage)
    finally:
        storage.close()


def test_a_resource_row_changes_where_it_is(tmp_path: Path) -> None:
    """A grant on a known resource updates its row in place (an upsert): the row keeps its
    rowid and its key's index entry, and holds exactly what the new grant wrote."""
    storage = open_storage(tmp_path, names=NAMES)
    try:
        _write_some(storage)
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            rows = "SELECT rowid, max_token FROM state WHERE token = 0 ORDER BY rowid"
            before = conn.execute(rows).fetchall()
        carry_on(storage)  # a third holder of "pool": its resource row's max token is now 3
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            after = conn.execute(rows).fetchall()
        assert [rowid for rowid, _ in after] == [rowid for rowid, _ in before]
        assert sorted(token for _, token in after) == sorted(
            [*(token for _, token in before if token != 2), 3]
        )
        pool = _resources(storage)[("t", "pool")]
        assert pool is not None and pool.max_token == 3 and len(pool.leases) == 3
    finally:
        storage.close()
