"""Issue 8, service side: a grant from the wait queue keeps its requestId (rule 12), the sweeper
finds what is due through deadline indexes (and still fires exactly when due), and waiters get
`StorageUnavailable` (503 unknown at the edge) while storage recovers."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from api import logs as access_log
from api.tenancy import RateLimiter
from ledger.answers import REDACTED, redact
from ledger.calls import LeaseCall, StorageUnavailable
from ledger.service import LeaseService
from ledger.sqlite.store import DB_NAME
from ledger.storage import open_storage

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
        storage = open_storage(tmp_path)
        service = LeaseService(storage, SECRET, clock=Clock())
        await service.start()
        held = await service.lease(call("acquire", holder="a"))
        waiting = asyncio.ensure_future(
            service.lease(call("wait", holder="b", wait_seconds=30, request_id="req-b"))
        )
        await asyncio.sleep(0.01)  # let the waiter queue up
        token = held.data["ownerToken"]
        await service.lease(call("release", owner_token=token))
        granted = await waiting
        assert granted.data["outcome"] == "GRANTED"
        retry = await service.lease(call("wait", holder="b", wait_seconds=30, request_id="req-b"))
        assert retry.data.get("replayed") is True, retry.data
        assert retry.data["fencingToken"] == granted.data["fencingToken"]
        await service.stop()
        storage.close()

    asyncio.run(scenario())


class NoScan(dict):  # type: ignore[type-arg]
    """A mapping the sweeper may look up in but never walk (issue 8 item 9)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the sweeper scanned every entry")

    def items(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the sweeper scanned every entry")

    def values(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the sweeper scanned every entry")


def test_the_sweeper_expires_requests_and_fires_dead_men_exactly_when_due(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        start = clock.now
        storage = open_storage(tmp_path)
        service = LeaseService(storage, SECRET, clock=clock)
        await service.start()
        first = await service.lease(call("acquire", "a", holder="w", request_id="q1", scope="s"))
        await service.heartbeat("t", "s", 5)
        clock.now = start + 3000
        await service.heartbeat("t", "s", 5)  # the deadline moves to start + 8000
        # Lookups are fine; walking every stored request or switch is what item 9 forbids.
        service._requests._known = NoScan(service._requests._known)
        service._deadmen._armed = NoScan(service._deadmen._armed)
        service.sweep(start + 7999)
        assert service.scope_leases("t", "s"), "released before its deadline"
        service.sweep(start + 8000)
        assert not service.scope_leases("t", "s"), "not released when due"
        await service.durable(service.committer.barrier())
        day = service.limits.idempotency_seconds * 1000
        clock.now = start + day
        service.sweep(start + day)
        assert service._requests.get("t", "q1") is not None  # exactly 24 h old: still known
        service.sweep(start + day + 1)
        assert service._requests.get("t", "q1") is None
        retry = await service.lease(call("acquire", "a", holder="w", request_id="q1", scope="s"))
        assert not retry.data.get("replayed")
        assert retry.data["fencingToken"] > first.data["fencingToken"]
        await service.stop()
        storage.close()

    asyncio.run(scenario())


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
        storage = open_storage(tmp_path)
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
