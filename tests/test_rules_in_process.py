"""Rules with time in them, in-process with a fixed clock (STYLE 5, 12): against `LeaseService`
(the sweeper driven by hand) and against `create_app` through `TestClient`. Nothing sleeps to
make lease time pass; the clock is moved."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, Limits
from ledger.writer.service import LeaseService
from tests.conftest import lease, rid
from tests.names_key import NAMES

T0 = 1_800_000_000_000
DAY_MS = 86_400_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@asynccontextmanager
async def service(tmp_path: Path, clock: Clock, **limits: int) -> AsyncIterator[LeaseService]:
    storage = open_storage(tmp_path / "data", names=NAMES)
    lease_service = LeaseService(storage, b"s" * 32, Limits(**limits), clock)
    await lease_service.start()
    try:
        yield lease_service
    finally:
        await lease_service.stop()
        storage.close()


def acquire(resource: str = "r", holder: str = "w", **fields: Any) -> LeaseCall:
    return LeaseCall("acquire", "t", resource, holder=holder, **fields)


def kinds(svc: LeaseService) -> list[str]:
    return [json.loads(leaf)["kind"] for _, leaf in svc.storage.entries(0, 1000)]


def run(scenario: Callable[[], Any]) -> None:
    asyncio.run(scenario())


def test_a_waiter_is_served_in_order_when_the_slot_is_released(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            held = await svc.lease(acquire(holder="a"))
            first = asyncio.ensure_future(svc.lease(LeaseCall("wait", "t", "r", holder="b")))
            second = asyncio.ensure_future(svc.lease(LeaseCall("wait", "t", "r", holder="c")))
            await asyncio.sleep(0)  # both join the queue, in this order
            token = held.owner_token
            await svc.lease(LeaseCall("release", "t", "r", owner_token=token))
            served = await first
            assert (served.data["outcome"], served.data["holder"]) == ("GRANTED", "b")
            assert not second.done()
            second.cancel()

    run(scenario)


def test_idempotency_is_remembered_for_24_hours_then_forgotten(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            call = acquire(request_id="req-1", ttl_seconds=60)
            first = await svc.lease(call)
            clock.now += DAY_MS - 1
            svc.sweep(clock.now)
            again = await svc.lease(call)
            assert again.data["replayed"] is True and again.data["fencingToken"] == 1
            clock.now += 2
            svc.sweep(clock.now)
            fresh = await svc.lease(call)
            assert "replayed" not in fresh.data
            assert fresh.data["fencingToken"] == first.data["fencingToken"] + 1

    run(scenario)


def test_the_dead_man_switch_releases_the_scope_when_heartbeats_stop(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            await svc.heartbeat("t", "job", 10)
            await svc.lease(acquire(scope="job", ttl_seconds=600))
            clock.now += 9_999
            svc.sweep(clock.now)
            assert len(await svc.scope_leases("t", "job")) == 1
            await svc.heartbeat("t", "job", 10)  # a beat moves the deadline
            clock.now += 9_999
            svc.sweep(clock.now)
            assert len(await svc.scope_leases("t", "job")) == 1
            clock.now += 1
            svc.sweep(clock.now)
            await svc.durable(svc.committer.barrier())
            assert await svc.scope_leases("t", "job") == []
            assert kinds(svc)[-1] == "scope_release"

    run(scenario)


def test_a_completed_lifecycle_ends_and_the_resource_starts_over(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock, lifecycle_seconds=60) as svc:
            granted = await svc.lease(acquire(fingerprint="job-1"))
            done = LeaseCall("complete", "t", "r", owner_token=granted.owner_token)
            done.result = {"ok": True}
            await svc.lease(done)
            clock.now += 59_999
            assert (await svc.lease(acquire(fingerprint="job-1"))).data["outcome"] == "COMPLETED"
            clock.now += 1
            after = await svc.lease(acquire(fingerprint="job-1"))
            assert after.data["outcome"] == "GRANTED" and after.data["fencingToken"] == 2

    run(scenario)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, Clock]]:
    clock = Clock()
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys", sweep_interval=0.01)
    with TestClient(create_app(settings, clock)) as client:
        yield client, clock


def until(condition: Callable[[], bool]) -> None:
    """Give the in-process sweeper (real scheduling, fixed lease clock) a few rounds."""
    for _ in range(500):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition never held")


def test_in_process_a_lease_expires_on_the_fixed_clock(app: tuple[TestClient, Clock]) -> None:
    client, clock = app
    name = rid()
    first = lease(client, "acquire", resource=name, holder="a", ttlSeconds=5)
    assert first.status_code == 201
    assert lease(client, "acquire", resource=name, holder="b").status_code == 409
    clock.now += 5_000
    second = lease(client, "acquire", resource=name, holder="b")
    assert second.status_code == 201 and second.json()["data"]["fencingToken"] == 2
    credential = second.json()["_provenance"]
    assert credential["validFrom"].startswith("2027-01-15")  # signed at the fixed time


def test_in_process_idempotency_expires_after_24_hours(app: tuple[TestClient, Clock]) -> None:
    client, clock = app
    body = {"resource": rid(), "holder": "a", "requestId": "req-1", "ttlSeconds": 60}
    assert lease(client, "acquire", **body).status_code == 201
    assert lease(client, "acquire", **body).json()["data"]["replayed"] is True
    clock.now += DAY_MS + 1
    until(lambda: lease(client, "acquire", **body).status_code == 201)


def test_in_process_the_dead_man_switch_fires(app: tuple[TestClient, Clock]) -> None:
    client, clock = app
    scope = rid("scope")
    beat = client.post(f"/api/v1/scopes/{scope}/heartbeat", json={"deadSeconds": 10})
    assert beat.status_code == 200
    lease(client, "acquire", resource=rid(), holder="a", scope=scope, ttlSeconds=600)
    assert len(client.get(f"/api/v1/scopes/{scope}").json()["data"]["leases"]) == 1
    clock.now += 10_000
    until(lambda: client.get(f"/api/v1/scopes/{scope}").json()["data"]["leases"] == [])
    health = client.get("/healthz").json()["data"]
    assert health["status"] == "pass" and health["tasks"]["sweeper"]["state"] == "running"


def entry_hash(subject: dict[str, Any]) -> str:
    found = subject["manifest"]["assertions"]
    return next(a["hash"] for a in found if a["label"] == "tenure.ledger.entry")


def test_in_process_a_replayed_answer_cites_its_entry_and_verifies(
    app: tuple[TestClient, Clock],
) -> None:
    client, _ = app
    body = {"resource": rid(), "holder": "a", "requestId": "req-2"}
    first = lease(client, "acquire", **body).json()
    replay = lease(client, "acquire", **body).json()
    assert replay["data"]["replayed"] is True
    subjects = [answer["_provenance"]["credentialSubject"] for answer in (first, replay)]
    cited = [
        ({k: v for k, v in s.items() if k not in ("manifest", "replayed")}, entry_hash(s))
        for s in subjects
    ]
    assert cited[0] == cited[1]  # the same entry and pseudonyms, carried up by the service
    report = client.post("/api/v1/verify-provenance", json=replay).json()["data"]
    assert report["status"] == "pass", report
