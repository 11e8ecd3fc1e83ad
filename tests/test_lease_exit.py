"""Leaving a ``client.lease`` block after the lease was lost raises LeaseLost, also when
only the local expiry knows it yet (the renewal thread has not woken): nothing is released
then, as the lease may already belong to someone else. Time is a fixed clock."""

from __future__ import annotations

import asyncio
import types

import pytest

from api.client import AsyncClient, Client, LeaseLost
from tests.conftest import Server, rid


def fixed_clock(monkeypatch: pytest.MonkeyPatch, module: str) -> list[float]:
    clock = [0.0]
    monotonic = types.SimpleNamespace(monotonic=lambda: clock[0])
    monkeypatch.setattr(f"{module}.time", monotonic)
    return clock


def test_leaving_past_local_expiry_raises_and_releases_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, told = fixed_clock(monkeypatch, "api.client.held"), []
    resource = rid("exit")
    with Client(server.url) as client:
        with pytest.raises(LeaseLost), client.lease(resource, "w1", ttl=60, on_lost=told.append):
            clock[0] += 60  # the renewal is due in 20 s of real time: it has not run
        assert client.get(resource).outcome == "HOLDING"  # not released: no longer ours
    assert len(told) == 1 and isinstance(told[0], LeaseLost)


def test_leaving_before_local_expiry_releases(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = fixed_clock(monkeypatch, "api.client.held")
    resource = rid("exit")
    with Client(server.url) as client:
        with client.lease(resource, "w1", ttl=60) as lease:
            clock[0] += 59.9
            assert not lease.lost
        assert client.get(resource).outcome == "FREE"


def test_the_async_lease_past_local_expiry_raises_and_releases_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, told = fixed_clock(monkeypatch, "api.client.aio"), []
    resource = rid("exit")

    async def hold() -> str:
        async with AsyncClient(server.url) as client:
            with pytest.raises(LeaseLost):
                async with client.lease(resource, "w1", ttl=60, on_lost=told.append):
                    clock[0] += 60
            return (await client.get(resource)).outcome

    assert asyncio.run(hold()) == "HOLDING"
    assert len(told) == 1 and isinstance(told[0], LeaseLost)
