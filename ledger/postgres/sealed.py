"""PostgreSQL schema step 3: the state tables hold digests and sealed names (docs/decisions/0010);
step 4: the stored request digests and fingerprints are keyed too (``ledger/keys/rekey.py``).

The step reads every clear row, recreates the tables (same names and indexes, ``bytea`` keys and
sealed columns) and writes the rows again through the translation of every later change
(``ledger/postgres/store.py``), all in the migration's one transaction.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ledger.changes import Change
from ledger.keys import rekey
from ledger.keys.names import NAMES_CHECK, NameCodec, check_key
from ledger.keys.unsealed import CLEAR_COLUMNS, clear_changes

SEALED_TABLES = """
CREATE TABLE resources(tenant bytea NOT NULL, name bytea NOT NULL, sealed bytea NOT NULL,
    capacity integer NOT NULL, max_token bigint NOT NULL, lifecycle_end bigint,
    fingerprint bytea, result bytea, completed_at bigint, completed_fingerprint bytea,
    PRIMARY KEY(tenant, name));
CREATE INDEX resources_lifecycle_end ON resources(lifecycle_end) WHERE lifecycle_end IS NOT NULL;
CREATE TABLE leases(tenant bytea NOT NULL, resource bytea NOT NULL, fencing_token bigint NOT NULL,
    sealed bytea NOT NULL, owner_digest bytea NOT NULL, expires_at bigint NOT NULL, scope bytea,
    lease_id bigint NOT NULL, PRIMARY KEY(tenant, resource, fencing_token));
CREATE INDEX leases_expires_at ON leases(expires_at);
CREATE INDEX leases_scope ON leases(tenant, scope) WHERE scope IS NOT NULL;
CREATE TABLE idempotency(tenant bytea NOT NULL, request_id bytea NOT NULL,
    request_digest bytea NOT NULL, answer bytea NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY(tenant, request_id));
CREATE INDEX idempotency_created_at ON idempotency(created_at);
CREATE TABLE scopes(tenant bytea NOT NULL, scope bytea NOT NULL, sealed bytea NOT NULL,
    dead_ms bigint NOT NULL, last_beat bigint NOT NULL, PRIMARY KEY(tenant, scope));
CREATE INDEX scopes_deadline ON scopes((last_beat + dead_ms));
CREATE TABLE waiters(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    waiter_id text NOT NULL UNIQUE, tenant bytea NOT NULL, resource bytea NOT NULL,
    worker text NOT NULL, call bytea NOT NULL, answer bytea);
CREATE INDEX waiters_queue ON waiters(tenant, resource, seq);
CREATE INDEX waiters_worker ON waiters(worker);
"""


def seal_names(conn: psycopg.Connection[Any], names: NameCodec) -> None:
    """Rewrite the clear state tables sealed, inside the caller's transaction."""
    from ledger.postgres.store import apply

    changes: list[Change] = []
    for table, columns in CLEAR_COLUMNS.items():
        order = " ORDER BY seq" if table == "waiters" else ""
        rows = conn.execute(f"SELECT {columns} FROM {table}{order}").fetchall()
        changes.extend(clear_changes(table, rows))
        conn.execute(f"DROP TABLE {table}")
    conn.execute(SEALED_TABLES)
    for change in changes:
        apply(conn, names, change)
    conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", (NAMES_CHECK, names.check))


def key_digests(conn: psycopg.Connection[Any], names: NameCodec) -> None:
    """Step 4: every stored request digest and fingerprint, keyed (``ledger/keys/rekey.py``)."""
    found = conn.execute("SELECT tenant, request_id, request_digest FROM idempotency")
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE idempotency SET request_digest = %s WHERE tenant = %s AND request_id = %s",
            rekey.requests(names, found.fetchall()),
        )
        found = conn.execute(
            "SELECT tenant, fingerprint, completed_fingerprint, tenant, name FROM resources"
            " WHERE fingerprint IS NOT NULL OR completed_fingerprint IS NOT NULL"
        )
        cursor.executemany(
            "UPDATE resources SET fingerprint = %s, completed_fingerprint = %s"
            " WHERE tenant = %s AND name = %s",
            rekey.fingerprints(names, found.fetchall()),
        )
        found = conn.execute("SELECT waiter_id, tenant, call FROM waiters")
        cursor.executemany(
            "UPDATE waiters SET call = %s WHERE waiter_id = %s",
            rekey.waiter_calls(names, found.fetchall()),
        )


def check_sealed_by(conn: psycopg.Connection[Any], names: NameCodec) -> None:
    """Refuse a names key other than the one that sealed this database's state."""
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (NAMES_CHECK,)).fetchone()
    check_key(names, None if row is None else str(row[0]))
