"""Names at rest (decisions/0010): a ledger written before names were sealed (schema step 2, clear
names in its state tables) is converted when a server opens it with the names key — in one
transaction, then (SQLite) the WAL emptied and the file rebuilt — and nothing of its raw names
is left in the files, while its leases, answers and fencing tokens carry on."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ledger.backends import open_storage
from ledger.keys.unsealed import CLEAR_COLUMNS
from ledger.lease.calls import LeaseCall, Limits
from ledger.postgres.schema import MIGRATIONS
from ledger.sqlite.opening import open_db
from ledger.sqlite.schema import DB_NAME, connect
from ledger.writer.service import LeaseService
from tests.names_key import NAMES
from tests.test_names_at_rest import database_bytes, leaked, marks

START = 1_800_000_000_000
HOUR = 3_600_000


def clear_rows(n: dict[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    """State rows as step 2 stored them (:data:`ledger.keys.unsealed.CLEAR_COLUMNS` order)."""
    t, r, s = n["tenant"], n["resource"], n["scope"]
    answer = f'{{"outcome": "GRANTED", "holder": "{n["holder"]}", "fencingToken": 7}}'
    return {
        "resources": [
            (t, r, 1, 7, START + HOUR, None, None, None, None),
            (t, n["other"], 1, 4, START + HOUR, None, f'{{"r": "{n["result"]}"}}', START, None),
        ],
        "leases": [(t, r, 7, n["holder"], b"d" * 32, START + 60_000, s, 3)],
        "idempotency": [(t, n["request"], b"q" * 32, answer, START)],
        "scopes": [(t, s, 60_000, START)],
        "waiters": [("w-1", t, r, "elsewhere", waiting_call(t, r, n["waiter"]), None)],
    }


def waiting_call(tenant: str, resource: str, holder: str) -> str:
    """A waiter's call as ``ledger/lease/waits.py`` stores it (no owner token)."""
    call = asdict(LeaseCall("wait", tenant, resource, holder=holder, wait_seconds=30))
    return json.dumps({"call": call, "digest": None})


def _insert(execute: Callable[[str, tuple[Any, ...]], object], mark: str, n: dict[str, str]):  # type: ignore[no-untyped-def]
    for table, rows in clear_rows(n).items():
        for row in rows:
            columns = CLEAR_COLUMNS[table]
            marks_ = ", ".join([mark] * len(row))
            execute(f"INSERT INTO {table}({columns}) VALUES ({marks_})", row)


def clear_sqlite(data: Path, n: dict[str, str]) -> sqlite3.Connection:
    """A step-2 SQLite ledger with clear rows, still open: its last writes are in the WAL."""
    conn, version = open_db(data, None)
    assert version == 2
    conn.close()
    clear = connect(data / DB_NAME)
    clear.execute("PRAGMA wal_autocheckpoint=0")  # keep the clear rows in the WAL too
    _insert(clear.execute, "?", n)
    return clear


def clear_postgres(url: str, n: dict[str, str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version(version integer PRIMARY KEY,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")  # fmt: skip
        for step, migration in enumerate(MIGRATIONS, start=1):
            migration(conn)
            conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (step,))
        _insert(conn.execute, "%s", n)


KINDS = ("tenant", "resource", "other", "holder", "scope", "request", "result", "waiter")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_older_ledger_is_sealed_on_open_and_carries_on(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    n = marks(*KINDS)
    location: Path | str = tmp_path / "data"
    clear = None
    if backend == "postgres":
        location = str(request.getfixturevalue("postgres_url"))
        clear_postgres(location, n)
    else:
        clear = clear_sqlite(tmp_path / "data", n)
        assert leaked(database_bytes(location), n) != []  # the clear rows are there to find
    storage = open_storage(location, names=NAMES)
    if clear is not None:
        clear.close()
    assert leaked(database_bytes(location), n) == []
    with storage.transaction() as tx:  # the waiter's call opens (before anyone serves it)
        waiter = tx.waiter("w-1")
        assert waiter is not None and waiter.call["call"]["holder"] == n["waiter"]
        assert tx.scope_resources(n["tenant"], n["scope"]) == [n["resource"]]
        assert tx.due_scopes(START + 60_000, 10) == [(n["tenant"], n["scope"])]
    now = [START + 1_000]

    async def carry_on() -> None:
        service = LeaseService(storage, b"s" * 32, limits=Limits(), clock=lambda: now[0])
        await service.start()
        t = n["tenant"]
        held = (await service.lease(LeaseCall("get", t, n["resource"]))).data
        assert held["holders"][0]["holder"] == n["holder"]
        done = (await service.lease(LeaseCall("acquire", t, n["other"], holder="h2"))).data
        assert done["outcome"] == "COMPLETED" and n["result"] in str(done)  # the sealed result
        replay = LeaseCall("acquire", t, n["resource"], holder="x", request_id=n["request"])
        assert (await service.lease(replay)).data["outcome"] == "IDEMPOTENCY_CONFLICT"  # found
        now[0] = START + 61_000  # the old lease expired: the next grant continues its tokens
        fresh = await service.lease(LeaseCall("acquire", t, n["resource"], holder="h3"))
        assert fresh.data["fencingToken"] == 8
        await service.durable(service.committer.barrier())
        await service.stop()

    try:
        asyncio.run(carry_on())
        with storage.transaction() as tx:
            assert tx.request(n["tenant"], n["request"]) is not None
    finally:
        storage.close()
    assert leaked(database_bytes(location), n) == []
