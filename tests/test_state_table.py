"""Schema step 4 (docs/decisions/0013): resources and their leases are rows of one SQLite table,
``state`` — and a ledger written before it, with two tables, moves over when a server opens it,
its leases, results, scopes and fencing tokens carrying on."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, Limits, StorageUnavailable
from ledger.lease.leases import Resource
from ledger.sqlite.schema import DB_NAME, SCHEMA_VERSION
from ledger.storage import Storage, StorageError
from ledger.writer.service import LeaseService
from tests.names_key import NAMES, unkeyed_fingerprints

START = 1_800_000_000_000
SECRET = b"s" * 32
NAMES_OF = [("t", "solo"), ("t", "pool"), ("t", "done"), ("u", "solo")]

STEP_3_TABLES = (
    "CREATE TABLE resources(tenant BLOB NOT NULL, name BLOB NOT NULL, sealed BLOB NOT NULL,"
    " capacity INTEGER NOT NULL, max_token INTEGER NOT NULL, lifecycle_end INTEGER,"
    " fingerprint BLOB, result BLOB, completed_at INTEGER, completed_fingerprint BLOB,"
    " PRIMARY KEY(tenant, name)) WITHOUT ROWID",
    "CREATE INDEX resources_lifecycle_end ON resources(lifecycle_end)"
    " WHERE lifecycle_end IS NOT NULL",
    "CREATE TABLE leases(tenant BLOB NOT NULL, resource BLOB NOT NULL,"
    " fencing_token INTEGER NOT NULL, sealed BLOB NOT NULL, owner_digest BLOB NOT NULL,"
    " expires_at INTEGER NOT NULL, scope BLOB, lease_id INTEGER NOT NULL,"
    " PRIMARY KEY(tenant, resource, fencing_token)) WITHOUT ROWID",
    "CREATE INDEX leases_expires_at ON leases(expires_at)",
    "CREATE INDEX leases_scope ON leases(tenant, scope) WHERE scope IS NOT NULL",
)
"""The two tables schema step 3 made before step 4 existed."""


def _write_some(storage: Storage) -> None:
    """A scoped lease, a semaphore with two holders, a completed result, another tenant."""

    async def run() -> None:
        service = LeaseService(storage, SECRET, limits=Limits(), clock=lambda: START)
        await service.start()
        calls = [
            LeaseCall("acquire", "t", "solo", holder="a", scope="job-1", ttl_seconds=60),
            LeaseCall("acquire", "t", "pool", holder="b", capacity=3),
            LeaseCall("acquire", "t", "pool", holder="c", capacity=3),
            LeaseCall("acquire", "u", "solo", holder="d"),
        ]
        for call in calls:
            assert (await service.lease(call)).data["outcome"] == "GRANTED"
        done = await service.lease(LeaseCall("acquire", "t", "done", holder="e", fingerprint="f"))
        token = done.owner_token
        finish = LeaseCall("complete", "t", "done", owner_token=token, result={"v": 1})
        assert (await service.lease(finish)).data["outcome"] == "COMPLETED"
        await service.stop()

    asyncio.run(run())


def carry_on(storage: Storage) -> None:
    """After :func:`_write_some`: the pool's next holder gets token 3, the completed resource
    still answers its result."""

    async def run() -> None:
        service = LeaseService(storage, SECRET, limits=Limits(), clock=lambda: START + 1)
        await service.start()
        third = LeaseCall("acquire", "t", "pool", holder="f", capacity=3)
        assert (await service.lease(third)).data["fencingToken"] == 3
        again = await service.lease(LeaseCall("acquire", "t", "done", holder="g"))
        assert again.data["outcome"] == "COMPLETED" and again.data["result"] == {"v": 1}
        await service.stop()

    asyncio.run(run())


def _resources(storage: Storage) -> dict[tuple[str, str], Resource | None]:
    with storage.transaction() as tx:
        return {key: tx.resource(*key) for key in NAMES_OF}


def _back_to_step_3(path: Path) -> None:
    """Rewrite a step-4 ledger as step 3 stored it: the same rows in ``resources``/``leases``."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    for statement in STEP_3_TABLES:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO resources SELECT tenant, name, sealed, capacity, max_token, lifecycle_end,"
        " fingerprint, result, completed_at, completed_fingerprint FROM state WHERE token = 0"
    )
    conn.execute(
        "INSERT INTO leases SELECT tenant, name, token, sealed, owner_digest, expires_at, scope,"
        " lease_id FROM state WHERE token > 0"
    )
    conn.execute("DROP TABLE state")
    unkeyed_fingerprints(conn, "resources", "f")
    conn.execute("PRAGMA user_version = 3")
    conn.execute("COMMIT")
    conn.close()


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}


def test_a_step_3_ledger_moves_into_one_table_and_carries_on(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, names=NAMES)
    _write_some(storage)
    before = _resources(storage)
    storage.close()
    pool = before[("t", "pool")]
    assert pool is not None and len(pool.leases) == 2
    _back_to_step_3(tmp_path / DB_NAME)
    assert {"resources", "leases"} <= _tables(tmp_path / DB_NAME)

    storage = open_storage(tmp_path, names=NAMES)
    try:
        tables = _tables(tmp_path / DB_NAME)
        assert "state" in tables and not {"resources", "leases"} & tables
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        assert _resources(storage) == before  # every row, its sealed names and result opened
        with storage.transaction() as tx:
            assert tx.scope_resources("t", "job-1") == ["solo"]
            due = list(tx.expired(START + 10**9, 10))
            assert sorted(due) == [("t", "pool"), ("t", "solo"), ("u", "solo")]
            assert tx.ended_lifecycles(START + 10**9, 10) != []
        carry_on(storage)
    finally:
        storage.close()


def test_a_fresh_ledger_has_one_state_table(tmp_path: Path) -> None:
    open_storage(tmp_path, names=NAMES).close()
    tables = _tables(tmp_path / DB_NAME)
    assert {"state", "state_expires_at", "state_scope", "state_lifecycle_end"} <= tables
    assert not {"resources", "leases"} & tables


@pytest.mark.parametrize(
    "row",
    [
        "(x'01', x'02', 0, x'00', NULL, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "(x'01', x'02', 1, x'00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, x'03', NULL, NULL, 5)",
    ],
    ids=["a resource without its capacity", "a lease without its expiry"],
)
def test_a_row_missing_what_its_kind_needs_is_refused(tmp_path: Path, row: str) -> None:
    open_storage(tmp_path, names=NAMES).close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute(f"INSERT INTO state VALUES {row}")


def test_a_lease_without_its_resource_row_is_refused_in_words_not_a_key(tmp_path: Path) -> None:
    """A damaged ledger (a lease row whose resource row is gone, so its highest fencing token
    is too) fails the calls on that resource with a StorageError saying so — 503 ``unknown``
    at the edge — never a KeyError naming the tenant and resource (it did), nor a guessed
    token."""
    call = LeaseCall(op="acquire", tenant="t", resource="orphan", holder="w")

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET, clock=lambda: START)
        await service.start()
        try:
            assert (await service.lease(call)).data["fencingToken"] == 1
            with sqlite3.connect(tmp_path / DB_NAME) as conn:
                assert conn.execute("DELETE FROM state WHERE token = 0").rowcount == 1
            with pytest.raises(StorageUnavailable) as refused:
                await service.lease(call)
            assert "a lease has no row for its resource" in str(refused.value)
            assert "orphan" not in str(refused.value)  # the names once leaked here
            with storage.transaction() as tx, pytest.raises(StorageError) as swept:
                tx.expired(START + 10**9, 10)  # the sweeper's read says the same
            assert "a lease has no row for its resource" in str(swept.value)
            other = LeaseCall(op="acquire", tenant="t", resource="other", holder="w")
            assert (await service.lease(other)).data["fencingToken"] == 1  # the rest goes on
        finally:
            await service.stop()
            storage.close()

    asyncio.run(scenario())
