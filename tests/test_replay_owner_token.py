"""docs/decisions/0007: a replayed grant returns its derived ownerToken only while
the lease is live and only for a requestId with 128 random bits; in-process, fixed clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall
from ledger.writer.service import LeaseService
from tests.conftest import lease, rid
from tests.names_key import NAMES

T0 = 1_800_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, Clock]]:
    clock = Clock()
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    with TestClient(create_app(settings, clock)) as client:
        yield client, clock


def acquire(client: TestClient, **body: Any) -> dict[str, Any]:
    answer: dict[str, Any] = lease(client, "acquire", **body).json()["data"]
    return answer


def test_a_strong_request_id_gets_the_same_owner_token_back(app: tuple[TestClient, Clock]) -> None:
    client, _ = app
    body = {"resource": rid(), "holder": "w", "requestId": rid("req"), "ttlSeconds": 60}
    first, replay = acquire(client, **body), acquire(client, **body)
    assert replay["replayed"] is True and replay["leaseLive"] is True
    assert replay["ownerToken"] == first["ownerToken"]
    released = lease(client, "release", resource=body["resource"], ownerToken=replay["ownerToken"])
    assert released.json()["data"]["outcome"] == "RELEASED"


def test_a_guessable_request_id_replays_without_the_token(app: tuple[TestClient, Clock]) -> None:
    client, _ = app
    body = {"resource": rid(), "holder": "w", "requestId": "job-42", "ttlSeconds": 60}
    first, replay = acquire(client, **body), acquire(client, **body)
    assert first["ownerToken"] and replay["replayed"] is True
    assert "ownerToken" not in replay and "128 random bits" in replay["ownerTokenWithheld"]


def test_a_replay_never_claims_a_lease_that_has_ended(app: tuple[TestClient, Clock]) -> None:
    client, clock = app
    body = {"resource": rid(), "holder": "w", "requestId": rid("req"), "ttlSeconds": 5}
    first = acquire(client, **body)
    clock.now += 5_000  # expired on the fixed clock
    answer = lease(client, "acquire", **body)
    replay = answer.json()["data"]
    assert answer.status_code == 409 and replay["replayed"] is True
    assert replay["outcome"] == "LOST" and replay["status"] == "fail"
    assert replay["firstOutcome"] == "GRANTED" and replay["leaseLive"] is False
    assert (
        replay["granted"] is False
        and "ownerToken" not in replay
        and replay["fencingToken"] == first["fencingToken"]
    )
    again = {**body, "requestId": rid("req")}
    taken = acquire(client, **again)  # the slot is free again and a new grant is the proof
    assert taken["outcome"] == "GRANTED" and taken["fencingToken"] == first["fencingToken"] + 1
    assert acquire(client, **body)["outcome"] == "LOST"  # another's lease is not this one


def test_a_replayed_renewal_of_an_ended_lease_says_lost(app: tuple[TestClient, Clock]) -> None:
    client, clock = app
    first = acquire(client, resource=rid(), holder="w", ttlSeconds=5)
    renew = {"resource": first["resource"], "ownerToken": first["ownerToken"]}
    renew |= {"requestId": rid("req"), "ttlSeconds": 5}
    assert lease(client, "renew", **renew).json()["data"]["outcome"] == "RENEWED"
    live = lease(client, "renew", **renew).json()["data"]
    assert live["outcome"] == "RENEWED" and live["leaseLive"] is True
    clock.now += 5_000
    answer = lease(client, "renew", **renew)
    ended = answer.json()["data"]
    assert answer.status_code == 409 and ended["outcome"] == "LOST"
    assert ended["firstOutcome"] == "RENEWED" and ended["granted"] is False


def test_a_replayed_release_answers_what_the_first_did(app: tuple[TestClient, Clock]) -> None:
    client, _ = app
    first = acquire(client, resource=rid(), holder="w", ttlSeconds=60)
    body = {"resource": first["resource"], "ownerToken": first["ownerToken"]}
    body["requestId"] = rid("req")
    released = lease(client, "release", **body)
    replay = lease(client, "release", **body)
    assert replay.status_code == released.status_code == 200
    expected = {**released.json()["data"], "replayed": True}
    assert replay.json()["data"] == expected and expected["granted"] is True


def test_a_grant_served_to_a_waiter_replays_its_token(tmp_path: Path) -> None:
    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, b"s" * 32, clock=Clock())
        await service.start()
        held = await service.lease(LeaseCall("acquire", "t", "r", holder="a"))
        wait = LeaseCall("wait", "t", "r", holder="b", wait_seconds=30, request_id=rid("req"))
        waiting = asyncio.ensure_future(service.lease(wait))
        await asyncio.sleep(0.01)  # the waiter joins the queue
        token = held.owner_token
        await service.lease(LeaseCall("release", "t", "r", owner_token=token))
        granted = await waiting
        replay = await service.lease(wait)
        assert granted.data["outcome"] == "GRANTED" and replay.data["replayed"] is True
        assert replay.owner_token == granted.owner_token is not None
        await service.stop()
        storage.close()

    asyncio.run(scenario())
