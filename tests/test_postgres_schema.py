"""PostgreSQL schema step 2 (docs/decisions/0006), as SQLite's: the ``waiters`` queue and the
indexes the sweeper, the dead-man switch and scopes query by — on the real server."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ledger.backends import open_storage
from ledger.changes import AddWaiter, ArmDeadMan, PutLease
from ledger.postgres import reads
from ledger.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from tests.names_key import NAMES


def test_a_version_1_ledger_is_migrated_to_2_keeping_its_rows(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version(version integer PRIMARY KEY,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")  # fmt: skip
        MIGRATIONS[0](conn)  # a ledger made by the server before step 2
        conn.execute("INSERT INTO schema_version(version) VALUES (1)")
        conn.execute("INSERT INTO resources(tenant, name, capacity, max_token)"
                     " VALUES ('t', 'r', 1, 1)")  # fmt: skip
        conn.execute(
            "INSERT INTO leases VALUES ('t', 'r', 1, 'w', '\\x00', 5000, 'job', 0)"
        )  # fmt: skip
        conn.execute("INSERT INTO scopes VALUES ('t', 'job', 10, 100)")
    storage = open_storage(postgres_url, names=NAMES)
    try:
        with storage.transaction() as tx:
            assert list(tx.expired(5_000, 10)) == [("t", "r")]
            assert tx.due_scopes(110, 10) == [("t", "job")]
            assert tx.scope_resources("t", "job") == ["r"]
            tx.apply(AddWaiter("w1", "t", "r", "A", '{"call": {}}'))
        with storage.transaction() as tx:
            assert [w.waiter_id for w in tx.waiters("t", "r")] == ["w1"]
    finally:
        storage.close()
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert rows == [(step,) for step in range(1, SCHEMA_VERSION + 1)]


@pytest.mark.parametrize(
    ("query", "params", "index"),
    [
        (reads.EXPIRED_LEASES, (5_000, 1000), "leases_expires_at"),
        (reads.LIVE_LEASES, (5_000,), "leases_expires_at"),
        (reads.DUE_SCOPES, (5_000, 1000), "scopes_deadline"),
        (reads.ENDED_LIFECYCLES, (5_000, 1000), "resources_lifecycle_end"),
        (reads.SCOPE_RESOURCES, (b"t", b"job"), "leases_scope"),
        (reads.WAITERS, (b"t", b"r"), "waiters_queue"),
    ],
)
def test_the_sweeper_and_scope_queries_can_use_their_index(
    postgres_url: str, query: str, params: tuple[Any, ...], index: str
) -> None:
    """With sequential scans priced out, each query's plan is its index: the expression
    and partial indexes match the queries as written (a mismatch would scan every row)."""
    storage = open_storage(postgres_url, names=NAMES)
    try:
        with storage.transaction() as tx:
            tx.apply(PutLease("t", "r", 1, "w", b"d" * 32, 5_000, "job", 0))
            tx.apply(ArmDeadMan("t", "job", 10, 100))
    finally:
        storage.close()
    with psycopg.connect(postgres_url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute("EXPLAIN " + query, params).fetchall()
    assert index in "\n".join(str(row[0]) for row in plan)
