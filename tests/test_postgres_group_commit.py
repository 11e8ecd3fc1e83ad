"""Group commit on PostgreSQL (docs/decisions/0036), on a real server (tests/postgres.py).

Concurrent calls queued behind a busy writer commit as ONE transaction (one ``xmin`` on all
their rows), with statements that do not grow with the group; a decision that fails inside a
group costs only itself: the others commit, the ledger and its tree stay whole, no gap; a node
whose tree another node moved reads the new frontier with the lock, not node by node, and by a
plan made for the tree's size then, not one kept from when it was small.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.lease.leases import Decision, Resource
from ledger.lease.recorder import Recorder
from ledger.log.merkle import CompactRange
from ledger.log.text import b64
from ledger.postgres.group import FRONTIER, Ahead, Group
from ledger.writer.service import LeaseService
from tests.names_key import NAMES
from tests.storage_util import acquire, running
from verify.rfc9162 import leaf_hash


async def group(service: LeaseService, calls: list[LeaseCall]) -> list[Any]:
    """Run ``calls`` concurrently while the writer is busy, so they queue and commit together;
    each answer, or the error it raised."""
    busy = threading.Event()
    blocker = service.committer.submit(lambda tx: busy.wait(10))
    tasks = [asyncio.ensure_future(service.lease(call)) for call in calls]
    await asyncio.sleep(0)  # one pass of the loop: every call is queued behind the blocker
    busy.set()
    await blocker
    return await asyncio.gather(*tasks, return_exceptions=True)


@contextmanager
def counted() -> Iterator[list[str]]:
    """Every statement a connection executes meanwhile (psycopg's one entry point)."""
    seen: list[str] = []
    real = psycopg.Connection.execute

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(query))
        return real(self, query, *args, **kwargs)

    psycopg.Connection.execute = execute  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        psycopg.Connection.execute = real  # type: ignore[method-assign]


def rows_by_transaction(url: str, first: int) -> list[int]:
    """How many entries from ``first`` on each transaction wrote, by its ``xmin``."""
    with psycopg.connect(url) as conn:
        sql = "SELECT count(*) FROM entries WHERE idx >= %s GROUP BY xmin::text ORDER BY 1"
        return [int(n) for (n,) in conn.execute(sql, (first,))]


def test_concurrent_calls_commit_in_one_transaction_with_few_statements(
    postgres_url: str,
) -> None:
    async def scenario() -> None:
        async with running(postgres_url) as (storage, service):
            await service.lease(acquire("first"))  # the frontier known, as in a running node
            sizes = {}
            for n in (4, 24):
                first = storage.tree_size()
                with counted() as seen:
                    answers = await group(service, [acquire(f"r{n}-{i}") for i in range(n)])
                assert [a.data["fencingToken"] for a in answers] == [1] * n
                assert rows_by_transaction(postgres_url, first) == [n]
                sizes[n] = len(seen)
            # One statement per kind, whatever the group's size (before 0036: 77 against 20). A
            # call whose resource was not yet noted when the group opened is read when it comes,
            # in one more reply of three statements (resources, leases, waiters): the writer
            # thread may drain the queue in two takes, a matter of timing, not of size.
            assert max(sizes.values()) < 16 and abs(sizes[24] - sizes[4]) <= 3, sizes

    asyncio.run(scenario())


def test_a_failing_decision_costs_only_itself(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Recorder.record

    def record(self: Recorder, res: Resource, decision: Decision, positioned: bool = True) -> Any:
        recorded = real(self, res, decision, positioned)  # its entry, nodes, rows are in the group
        if res.name == "poison":
            raise RuntimeError("this decision fails after it was recorded")
        return recorded

    monkeypatch.setattr(Recorder, "record", record)

    async def scenario() -> None:
        async with running(postgres_url) as (storage, service):
            await service.lease(acquire("before"))
            names = ["a", "b", "poison", "c", "d", "e"]
            answers = await group(service, [acquire(name) for name in names])
            failed = answers.pop(2)
            assert isinstance(failed, StorageUnavailable)
            assert [a.data["fencingToken"] for a in answers] == [1] * 5
            assert [a.data["ledger"]["logIndex"] for a in answers] == [1, 2, 3, 4, 5]
            after = await service.lease(acquire("after"))
            assert after.data["ledger"]["logIndex"] == 6  # no gap, nothing of the poison
            size = storage.tree_size()
            tree = CompactRange()
            for index, leaf in storage.entries(0, size):
                assert index == tree.size
                tree.append(leaf_hash(leaf))
            assert size == 7 and service.position().root_hash == b64(tree.root())
            assert rows_by_transaction(postgres_url, 1)[-2:] == [1, 5]  # the five together

    asyncio.run(scenario())


def test_a_node_reads_the_frontier_another_node_moved_with_the_lock(postgres_url: str) -> None:
    async def scenario() -> None:
        async with running(postgres_url) as (_, one), running(postgres_url) as (storage, two):
            await one.lease(acquire("warm-one"))
            await two.lease(acquire("warm-two"))  # each has seen the other append
            with counted() as seen:
                for n in range(6):
                    await (one if n % 2 else two).lease(acquire(f"turn-{n}"))
            single = [sql for sql in seen if sql.startswith("SELECT hash FROM tree_nodes")]
            assert single == []  # no node read one by one: the frontier came with the lock
            tree = CompactRange()
            for _, leaf in storage.entries(0, storage.tree_size()):
                tree.append(leaf_hash(leaf))
            assert tree.size == 8
            for node in (one, two):
                assert node.position().root_hash == b64(tree.root())

    asyncio.run(scenario())


def test_a_frontier_reload_reads_a_few_pages_however_the_tree_grew(postgres_url: str) -> None:
    """A node's first reloads meet a small tree. A plan made then (the primary key searched by
    level alone, from the level's first node to the one wanted) must not be kept: with two
    nodes every group reloads, and the tree grows by thousands of nodes a second."""
    open_storage(postgres_url, names=NAMES).close()  # the schema
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        grow(conn, 0, 6)
        ahead = Ahead()
        for _ in range(8):  # psycopg prepares a statement on its fifth run
            ahead.moved = True
            with conn.transaction():
                assert Group.open(conn, None, ahead).size == 7
        grow(conn, 7, 100_000)
        assert reload_pages(conn) < 60


def grow(conn: psycopg.Connection[Any], first: int, last: int) -> None:
    """Leaves ``first``..``last`` of a test tree and their level-0 nodes (hashes not checked)."""
    for sql in (
        "INSERT INTO entries SELECT i, '\\x00' FROM generate_series(%s::bigint, %s) AS i",
        "INSERT INTO tree_nodes SELECT 0, i, '\\x00' FROM generate_series(%s::bigint, %s) AS i",
    ):
        conn.execute(sql, (first, last))


def reload_pages(conn: psycopg.Connection[Any]) -> int:
    """The pages the session's next frontier reload reads: by the plan it prepared for the
    reload, if it kept one, else by the plan a run makes now."""
    kept = conn.execute(
        "SELECT name FROM pg_prepared_statements WHERE statement = %s", (FRONTIER,)
    ).fetchone()
    sql = f"EXECUTE {kept[0]}" if kept else FRONTIER
    row = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql).fetchone()
    assert row is not None
    top = row[0][0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])
