"""PostgreSQL schema and migrations: numbered steps, each recorded in ``schema_version``.

The tables mirror the SQLite ledger (``ledger/sqlite/store.py``) with PostgreSQL types, plus
``log_head``: one row that every write transaction locks first (``SELECT … FOR UPDATE``), so
appends are serialized across connections and nodes — one log index sequence, one tree
(docs/decisions/0005, docs/postgres.md). ``entries`` and ``tree_nodes`` are append-only in the
database itself: triggers refuse UPDATE, DELETE and TRUNCATE whoever connects.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import psycopg

from ledger.keys.names import NameCodec
from ledger.postgres.sealed import check_sealed_by, key_digests, seal_names
from ledger.storage import StorageError

SCHEMA_VERSION = 4
NAMES_STEP = 3
"""The step that seals names (docs/decisions/0010): it needs the names key to run, as does
step 4, which keys the stored request digests and fingerprints."""
MIGRATION_LOCK = 0x7465_6E75_7265_0001  # pg_advisory_xact_lock key: "tenure" + 1
"""Held while migrating, so nodes starting together create the schema once."""

_TABLES = """
CREATE TABLE entries(idx bigint PRIMARY KEY, leaf bytea NOT NULL);
CREATE TABLE tree_nodes(level integer NOT NULL, idx bigint NOT NULL, hash bytea NOT NULL,
    PRIMARY KEY(level, idx));
CREATE TABLE resources(tenant text NOT NULL, name text NOT NULL, capacity integer NOT NULL,
    max_token bigint NOT NULL, lifecycle_end bigint, fingerprint bytea, result text,
    completed_at bigint, completed_fingerprint bytea, PRIMARY KEY(tenant, name));
CREATE TABLE leases(tenant text NOT NULL, resource text NOT NULL, fencing_token bigint NOT NULL,
    holder text NOT NULL, owner_digest bytea NOT NULL, expires_at bigint NOT NULL, scope text,
    lease_id bigint NOT NULL, PRIMARY KEY(tenant, resource, fencing_token));
CREATE TABLE idempotency(tenant text NOT NULL, request_id text NOT NULL,
    request_digest bytea NOT NULL, answer text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY(tenant, request_id));
CREATE INDEX idempotency_created_at ON idempotency(created_at);
CREATE TABLE scopes(tenant text NOT NULL, scope text NOT NULL, dead_ms bigint NOT NULL,
    last_beat bigint NOT NULL, PRIMARY KEY(tenant, scope));
CREATE TABLE signing_keys(did text PRIMARY KEY, public_key bytea NOT NULL,
    multikey text NOT NULL, valid_from bigint NOT NULL, valid_until bigint);
CREATE TABLE checkpoints(tree_size bigint PRIMARY KEY, root_hash bytea NOT NULL,
    timestamp bigint NOT NULL, note text NOT NULL, key_did text NOT NULL);
CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE api_keys(key_digest bytea PRIMARY KEY, tenant text NOT NULL, name text NOT NULL,
    created_at bigint NOT NULL);
CREATE TABLE log_head(id integer PRIMARY KEY CHECK (id = 1), node text);
INSERT INTO log_head VALUES (1, NULL);
"""

_APPEND_ONLY = """
CREATE FUNCTION tenure_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END $$;
"""


def _v1(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    conn.execute(_TABLES)
    conn.execute(_APPEND_ONLY)
    for table in ("entries", "tree_nodes"):
        conn.execute(
            f"CREATE TRIGGER {table}_no_rewrite BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION tenure_append_only()"
        )
        conn.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION tenure_append_only()"
        )
    conn.execute("INSERT INTO meta VALUES ('log_id', %s)", (secrets.token_hex(8),))


_V2 = """
CREATE INDEX leases_expires_at ON leases(expires_at);
CREATE INDEX leases_scope ON leases(tenant, scope) WHERE scope IS NOT NULL;
CREATE INDEX scopes_deadline ON scopes((last_beat + dead_ms));
CREATE INDEX resources_lifecycle_end ON resources(lifecycle_end) WHERE lifecycle_end IS NOT NULL;
CREATE TABLE waiters(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    waiter_id text NOT NULL UNIQUE, tenant text NOT NULL, resource text NOT NULL,
    worker text NOT NULL, call text NOT NULL, answer text);
CREATE INDEX waiters_queue ON waiters(tenant, resource, seq);
CREATE INDEX waiters_worker ON waiters(worker);
"""


def _v2(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """As SQLite's step 2 (docs/decisions/0006): the indexes the sweeper and scopes query by,
    and the ``waiters`` queue (FIFO by ``seq``)."""
    conn.execute(_V2)


MIGRATIONS: list[Callable[[psycopg.Connection[tuple[object, ...]]], None]] = [_v1, _v2]
"""The steps that need no key; :data:`NAMES_STEP` (``ledger/postgres/sealed.py``) follows."""


def migrate(conn: psycopg.Connection[tuple[object, ...]], names: NameCodec | None = None) -> int:
    """Bring the schema to SCHEMA_VERSION, each step in its own transaction and recorded in
    ``schema_version``; an advisory lock makes concurrent starts wait for each other. The step
    that seals names runs only with ``names``; the version reached is returned."""
    steps = list(MIGRATIONS)
    if names is not None:
        steps.append(lambda conn: seal_names(conn, names))
        steps.append(lambda conn: key_digests(conn, names))
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version(version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
    for step in range(_version(conn), len(steps)):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            if _version(conn) != step:
                continue  # another node applied it while this one waited
            steps[step](conn)
            conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (step + 1,))
    if names is not None:
        check_sealed_by(conn, names)
    return _version(conn)


def _version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    version = 0 if row is None else int(str(row[0]))
    if version > SCHEMA_VERSION:
        raise StorageError(f"ledger schema {version} is newer than this server ({SCHEMA_VERSION})")
    return version


def has_ledger(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether this database already holds a tenure ledger (its ``meta`` table)."""
    row = conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()
    return bool(row and row[0])
