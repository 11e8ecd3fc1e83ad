"""What the PostgreSQL backend guarantees beyond the storage contract, on the real server.

The contract suite (tests/test_storage_contract.py) already runs every Protocol method on
PostgreSQL; these tests hold what only a shared database server adds: the append-only rule
enforced against anyone who connects, durable commits whatever the database's default, recorded
migrations, writers of several nodes serialized by the ``log_head`` lock, reconnection after the
server dropped the sessions, and URLs whose password never reaches a message.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from ledger.backends import open_storage, storage_exists
from ledger.changes import AppendEntry, PutNodes, PutResource
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.location import redact
from ledger.postgres.backend import PostgresStorage
from ledger.postgres.schema import SCHEMA_VERSION
from ledger.storage import DAMAGED, Storage, StorageError
from ledger.writer.service import LeaseService
from tests.names_key import NAMES


@pytest.fixture
def storage(postgres_url: str) -> Iterator[PostgresStorage]:
    opened = PostgresStorage.open(postgres_url, names=NAMES)
    with opened.transaction() as tx:
        tx.apply(AppendEntry(0, b'{"e":0}'))
        tx.apply(PutNodes(((0, 0, b"n" * 32),)))
    yield opened
    opened.close()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE entries SET leaf = '\\x00'",
        "DELETE FROM entries",
        "TRUNCATE entries",
        "UPDATE tree_nodes SET hash = '\\x00'",
        "DELETE FROM tree_nodes",
        "TRUNCATE tree_nodes",
    ],
)
def test_the_database_refuses_to_rewrite_entries_and_nodes(
    storage: PostgresStorage, postgres_url: str, statement: str
) -> None:
    with psycopg.connect(postgres_url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(statement)
    assert "append-only" in str(refused.value)
    assert (storage.entry(0), storage.node(0, 0)) == (b'{"e":0}', b"n" * 32)


def test_commits_are_durable_even_where_the_database_default_is_not(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        name = sql.Identifier(admin.info.dbname)
        admin.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(name))
    storage = PostgresStorage.open(postgres_url, names=NAMES)
    try:
        with storage.transaction() as tx:
            row = tx.conn.execute("SHOW synchronous_commit").fetchone()
        assert row == ("on",)
    finally:
        storage.close()


def test_the_schema_is_migrated_once_and_its_versions_recorded(postgres_url: str) -> None:
    assert storage_exists(postgres_url) is False
    open_storage(postgres_url, names=NAMES).close()
    open_storage(postgres_url, names=NAMES).close()
    assert storage_exists(postgres_url) is True
    with psycopg.connect(postgres_url) as conn:
        versions = conn.execute("SELECT version FROM schema_version").fetchall()
        conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    assert versions == [(step,) for step in range(1, SCHEMA_VERSION + 1)]
    with pytest.raises(StorageError, match="newer than this server"):
        open_storage(postgres_url, names=NAMES)


def test_several_nodes_open_one_database_and_their_writes_take_turns(postgres_url: str) -> None:
    first = open_storage(postgres_url, names=NAMES)
    second = open_storage(postgres_url, names=NAMES)
    entered = threading.Event()

    def write_second() -> None:
        with second.transaction() as tx:  # waits for the log_head lock the first one holds
            entered.set()
            tx.apply(AppendEntry(tx.tree_size(), b'{"e":1}'))

    try:
        with first.transaction() as tx:
            writer = threading.Thread(target=write_second)
            writer.start()
            _until_a_session_waits_for_a_lock(postgres_url)
            assert not entered.is_set()  # the second node's transaction is queued behind
            tx.apply(AppendEntry(tx.tree_size(), b'{"e":0}'))
        writer.join(10)
        assert entered.is_set()
        assert [leaf for _, leaf in second.entries(0, 2)] == [b'{"e":0}', b'{"e":1}']
    finally:
        first.close()
        second.close()


def test_reads_and_writes_reconnect_after_the_server_dropped_every_session(
    storage: PostgresStorage, postgres_url: str
) -> None:
    assert storage.tree_size() == 1
    _terminate_sessions(postgres_url)
    assert storage.tree_size() == 1  # the reader's dead connection is replaced
    with storage.transaction() as tx:  # the pool checks its connection before lending it
        tx.apply(PutResource("t", "r", 1, 1, None, None, None, None, None))
    with storage.transaction() as tx:
        found = tx.resource("t", "r")
        assert found is not None and found.max_token == 1


def test_an_unreachable_database_is_a_storage_error_without_the_password(
    postgres: object, tmp_path: object
) -> None:
    url = f"postgresql://tenure:s3cret@/nowhere?host={tmp_path}&connect_timeout=1"
    with pytest.raises(StorageError) as failed:
        open_storage(url, names=NAMES)
    assert "s3cret" not in str(failed.value) and "***" in str(failed.value)
    assert redact("postgresql://u:pw@db.example:5432/t") == "postgresql://u:***@db.example:5432/t"
    assert redact("postgresql://u@db/t") == "postgresql://u@db/t"


def _until_a_session_waits_for_a_lock(url: str) -> None:
    deadline = time.monotonic() + 10
    with psycopg.connect(url, autocommit=True) as admin:
        while time.monotonic() < deadline:
            row = admin.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
            if row and row[0]:
                return
    raise AssertionError("no transaction waited for the log head")


def _terminate_sessions(url: str) -> None:
    """End every tenure session on the server, as a restart or a fail-over would."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE application_name = 'tenure' AND datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )


def test_a_lease_without_its_resource_row_is_refused_not_taken_for_a_fresh_resource(
    postgres_url: str,
) -> None:
    """As on SQLite (tests/test_state_table.py): a lease row whose resource row is gone means
    the resource's highest fencing token is gone too. Both reads refuse in words, without the
    names; a fresh grant at token 1 would hand out a token already held."""
    call = LeaseCall(op="acquire", tenant="t", resource="orphan", holder="w")

    async def scenario(storage: Storage) -> None:
        service = LeaseService(storage, b"s" * 32, clock=lambda: 1_800_000_000_000)
        await service.start()
        try:
            assert (await service.lease(call)).data["fencingToken"] == 1
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                assert conn.execute("DELETE FROM resources").rowcount == 1
            with pytest.raises(StorageUnavailable) as refused:
                await service.lease(call)  # the batch read
            assert DAMAGED in str(refused.value) and "orphan" not in str(refused.value)
            with (
                pytest.raises(StorageError, match="a lease has no row for its resource"),
                storage.transaction() as tx,
            ):
                tx.resource("t", "orphan")  # the single read
            other = LeaseCall(op="acquire", tenant="t", resource="other", holder="w")
            assert (await service.lease(other)).data["fencingToken"] == 1  # the rest goes on
        finally:
            await service.stop()

    storage = open_storage(postgres_url, names=NAMES)
    try:
        asyncio.run(scenario(storage))
    finally:
        storage.close()
