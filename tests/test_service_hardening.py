"""The service: a grant from the wait queue keeps its requestId (rule 12), the sweeper
finds what is due through deadline indexes (and still fires exactly when due), and waiters get
`StorageUnavailable` (503 unknown at the edge) while storage recovers."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable
from pathlib import Path

import pytest

from api import logs as access_log
from api.tenancy import RateLimiter
from ledger.backends import open_storage
from ledger.lease.answers import REDACTED, redact
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.sqlite.schema import DB_NAME
from ledger.writer.service import LeaseService
from tests.names_key import NAMES

SECRET = b"s" * 32


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def call(op: str, resource: str = "r", **fields: object) -> LeaseCall:
    return LeaseCall(op=op, tenant="t", resource=resource, **fields)  # type: ignore[arg-type]


def test_a_grant_served_from_the_queue_replays_its_request_id(tmp_path: Path) -> None:
    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET, clock=Clock())
        await service.start()
        held = await service.lease(call("acquire", holder="a"))
        waiting = asyncio.ensure_future(
            service.lease(call("wait", holder="b", wait_seconds=30, request_id="req-b"))
        )
        await asyncio.sleep(0.01)  # let the waiter queue up
        token = held.owner_token
        await service.lease(call("release", owner_token=token))
        granted = await waiting
        assert granted.data["outcome"] == "GRANTED"
        retry = await service.lease(call("wait", holder="b", wait_seconds=30, request_id="req-b"))
        assert retry.data.get("replayed") is True, retry.data
        assert retry.data["fencingToken"] == granted.data["fencingToken"]
        await service.stop()
        storage.close()

    asyncio.run(scenario())


def test_the_sweeper_expires_requests_and_fires_dead_men_exactly_when_due(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        start = clock.now
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET, clock=clock)
        await service.start()
        first = await service.lease(call("acquire", "a", holder="w", request_id="q1", scope="s"))
        await service.heartbeat("t", "s", 5)
        clock.now = start + 3000
        await service.heartbeat("t", "s", 5)  # the deadline moves to start + 8000
        # The sweeper finds what is due through storage indexes, not a scan.
        await service.sweep(start + 7999)
        assert await service.scope_leases("t", "s"), "released before its deadline"
        await service.sweep(start + 8000)
        assert not await service.scope_leases("t", "s"), "not released when due"
        day = service.limits.idempotency_seconds * 1000
        clock.now = start + day
        await service.sweep(start + day)

        def remembered() -> Awaitable[object]:
            return service.durable(service.committer.submit(lambda tx: tx.request("t", "q1")))

        assert await remembered() is not None  # exactly 24 h old: still known
        await service.sweep(start + day + 1)
        assert await remembered() is None
        retry = await service.lease(call("acquire", "a", holder="w", request_id="q1", scope="s"))
        assert not retry.data.get("replayed")
        assert retry.data["fencingToken"] > first.data["fencingToken"]
        await service.stop()
        storage.close()

    asyncio.run(scenario())


def test_the_sweeper_queries_by_index(tmp_path: Path) -> None:
    """Finding what is due never scans a table: SQLite's plan names the indexes."""
    open_storage(tmp_path, names=NAMES).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    plans = {
        "SELECT tenant, name FROM state INDEXED BY state_expires_at"
        " WHERE token > 0 AND expires_at <= 1 ORDER BY expires_at LIMIT 9": "state_expires_at",
        "SELECT tenant, name FROM state INDEXED BY state_lifecycle_end WHERE lifecycle_end"
        " IS NOT NULL AND lifecycle_end <= 1 ORDER BY lifecycle_end LIMIT 9": "state_lifecycle",
        "SELECT tenant, scope FROM scopes INDEXED BY scopes_deadline"
        " WHERE last_beat + dead_ms <= 1 LIMIT 9": "scopes_deadline",
        "SELECT tenant, name FROM state INDEXED BY state_scope"
        " WHERE tenant = 't' AND scope = 's'": "state_scope",
        "DELETE FROM idempotency WHERE created_at < 1": "created_at",
    }  # the same statements as ledger/sqlite/reads.py and store.py
    for sql, index in plans.items():
        plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING" in plan and index in plan, (sql, plan)
    conn.close()


def test_the_rate_limiter_keeps_few_buckets() -> None:
    limiter = RateLimiter(rate=1.0, max_buckets=1000)
    for n in range(10_000):  # a namespace per request, each in its own bucket
        assert limiter.retry_after(f"ns/{n}", 0.0) is None
    assert len(limiter) <= 1000
    assert limiter.retry_after("ns/last", 10.0) is None  # every other bucket has refilled
    assert len(limiter) == 1
    for _ in range(2):
        limiter.retry_after("busy", 20.0)
    assert limiter.retry_after("busy", 20.0) is not None  # dropping never resets a live bucket


def test_redaction_covers_the_usual_secret_names() -> None:
    names = [
        "passwd", "PWD", "db_pwd", "credentials", "access_key", "AWS_ACCESS_KEY_ID", "Cookie",
        "set-cookie", "session", "sessionId", "x-api-key", "client.secret", "jwt", "otp",
    ]  # fmt: skip
    result = {"outer": [{name: "hunter2" for name in names}], "author": "ok", "count": 3}
    redacted = redact(result)
    assert redacted["outer"][0] == dict.fromkeys(names, REDACTED)
    assert redacted["author"] == "ok" and redacted["count"] == 3


def test_waiters_get_storage_unavailable_during_recovery(tmp_path: Path) -> None:
    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET, clock=Clock())
        await service.start()
        await service.lease(call("acquire", holder="a"))
        waiting = asyncio.ensure_future(service.lease(call("wait", holder="b", wait_seconds=30)))
        await asyncio.sleep(0.01)
        conn = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON entries "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        with pytest.raises(StorageUnavailable):
            await service.lease(call("acquire", "other", holder="c"))
        with pytest.raises(StorageUnavailable):  # answered 503 unknown, not a bare 500
            await asyncio.wait_for(waiting, 5)
        conn.execute("DROP TRIGGER disk_full")
        conn.close()
        await service.stop()
        storage.close()

    asyncio.run(scenario())


def test_a_500_log_line_names_no_scope(caplog: pytest.LogCaptureFixture) -> None:
    access_log.install()
    scope = "scope-" + "ab12" * 8
    with caplog.at_level(logging.ERROR, logger="tenure"):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("tenure").exception(
                "unhandled error on %s", f"/api/v1/scopes/{scope}/release"
            )
    assert caplog.records and scope not in caplog.text
    assert "/api/v1/scopes/[scope]/release" in caplog.text
