"""Concurrency against a real server over a real socket (DESIGN §2 rules 1, 2 and 6).

Many clients race for the same resources; what a user relies on is that the server serializes
them: one winner per slot, fencing tokens that only go up, and a ledger that records exactly the
grants it acknowledged. Requests are driven from asyncio through a pool of ~100 connections.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.conftest import Server, rid

POOL = httpx.Limits(max_connections=100, max_keepalive_connections=100)
T = TypeVar("T")


def run(server: Server, body: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
    """Run `body` with a pooled async client on a fresh event loop."""

    async def main() -> T:
        timeout = httpx.Timeout(60.0)
        async with httpx.AsyncClient(base_url=server.url, limits=POOL, timeout=timeout) as client:
            return await body(client)

    return asyncio.run(main())


async def call(client: httpx.AsyncClient, op: str, **body: Any) -> httpx.Response:
    return await client.post(f"/api/v1/lease/{op}", json=body)


async def tree_size(client: httpx.AsyncClient) -> int:
    response = await client.get("/healthz")
    return int(response.json()["data"]["ledger"]["treeSize"])


def ledger_entries(server: Server) -> dict[int, dict[str, Any]]:
    """Every entry of the server's SQLite ledger, parsed, read through a read-only connection."""
    uri = f"file:{Path(server.data) / 'tenure.db'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        rows = conn.execute("SELECT idx, leaf FROM entries ORDER BY idx").fetchall()
    return {idx: json.loads(leaf) for idx, leaf in rows}


def test_thousand_concurrent_acquires_of_one_resource_grant_exactly_one(server: Server) -> None:
    resource = rid("stampede")

    async def body(client: httpx.AsyncClient) -> tuple[int, int, list[httpx.Response]]:
        before = await tree_size(client)
        attempts = [
            call(client, "acquire", resource=resource, holder=f"worker-{i}", ttlSeconds=600)
            for i in range(1000)
        ]
        responses = await asyncio.gather(*attempts)
        return before, await tree_size(client), responses

    before, after, responses = run(server, body)

    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 1, 409: 999}, statuses
    [winner] = [r.json()["data"] for r in responses if r.status_code == 201]
    assert winner["fencingToken"] == 1
    refusals = [r.json()["data"] for r in responses if r.status_code == 409]
    assert {d["outcome"] for d in refusals} == {"HELD"}
    assert all(d["heldBy"] == [winner["holder"]] for d in refusals)
    assert after == before + 1, "only the one grant may be recorded; refusals append nothing"
    entry = ledger_entries(server)[winner["ledger"]["logIndex"]]
    assert (entry["kind"], entry["fencingToken"]) == ("acquire", 1)


def test_semaphore_of_five_grants_exactly_five_distinct_fencing_tokens(server: Server) -> None:
    resource = rid("semaphore")

    async def body(client: httpx.AsyncClient) -> tuple[list[httpx.Response], httpx.Response]:
        attempts = [
            call(client, "acquire", resource=resource, holder=f"w-{i}", capacity=5, ttlSeconds=600)
            for i in range(200)
        ]
        responses = await asyncio.gather(*attempts)
        return responses, await call(client, "get", resource=resource)

    responses, view = run(server, body)

    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 5, 409: 195}, statuses
    granted = [r.json()["data"] for r in responses if r.status_code == 201]
    assert sorted(d["fencingToken"] for d in granted) == [1, 2, 3, 4, 5]
    assert {r.json()["data"]["outcome"] for r in responses if r.status_code == 409} == {"HELD"}
    holders = view.json()["data"]["holders"]
    assert sorted((h["holder"], h["fencingToken"]) for h in holders) == sorted(
        (d["holder"], d["fencingToken"]) for d in granted
    )


def test_semaphore_never_shows_more_live_holders_than_capacity_under_churn(
    server: Server,
) -> None:
    """Workers acquire and release a capacity-3 resource while observers `get` it throughout."""
    resource, capacity, workers, cycles = rid("churn"), 3, 24, 15
    seen_holders: list[int] = []

    async def worker(client: httpx.AsyncClient, n: int) -> tuple[int, int]:
        grants = released = 0
        for _ in range(cycles):
            got = await call(
                client, "acquire", resource=resource, holder=f"w-{n}", capacity=capacity
            )
            if got.status_code == 409:
                assert got.json()["data"]["outcome"] == "HELD"
                continue
            assert got.status_code == 201, got.text
            grants += 1
            token = got.json()["data"]["ownerToken"]
            gone = await call(client, "release", resource=resource, ownerToken=token)
            assert gone.status_code == 200, gone.text
            released += 1
        return grants, released

    async def observer(client: httpx.AsyncClient, done: asyncio.Event) -> None:
        for _ in range(2000):  # bounded; the workers finish long before
            if done.is_set():
                return
            view = (await call(client, "get", resource=resource)).json()["data"]
            tokens = [h["fencingToken"] for h in view["holders"]]
            assert len(tokens) == len(set(tokens))
            seen_holders.append(len(tokens))

    async def body(client: httpx.AsyncClient) -> list[tuple[int, int]]:
        done = asyncio.Event()
        watchers = [asyncio.create_task(observer(client, done)) for _ in range(4)]
        try:
            return await asyncio.gather(*(worker(client, n) for n in range(workers)))
        finally:
            done.set()
            await asyncio.gather(*watchers)

    results = run(server, body)

    grants = sum(g for g, _ in results)
    assert grants > capacity, "the churn should have granted the slots many times over"
    assert seen_holders, "the observers should have looked at least once"
    assert max(seen_holders) <= capacity


def test_acquire_release_cycles_give_strictly_increasing_fencing_and_an_exact_ledger(
    server: Server,
) -> None:
    """Fencing tokens per resource go 1, 2, 3, … in ledger (grant) order, never repeating, and
    the ledger holds one acquire entry per 201 and one release entry per 200 RELEASED."""
    resources = [rid("cycle") for _ in range(4)]
    clients, cycles = 40, 20
    grants: list[tuple[str, dict[str, Any]]] = []
    releases: list[tuple[str, dict[str, Any]]] = []

    async def worker(client: httpx.AsyncClient, n: int) -> None:
        rng = random.Random(n)
        for _ in range(cycles):
            resource = rng.choice(resources)
            got = await call(client, "acquire", resource=resource, holder=f"c-{n}")
            if got.status_code == 409:
                assert got.json()["data"]["outcome"] == "HELD", got.text
                continue
            assert got.status_code == 201, got.text
            grant = got.json()["data"]
            grants.append((resource, grant))
            gone = await call(
                client,
                "release",
                resource=resource,
                ownerToken=grant["ownerToken"],
                fencingToken=grant["fencingToken"],
            )
            assert gone.status_code == 200, gone.text
            assert gone.json()["data"]["outcome"] == "RELEASED"
            releases.append((resource, gone.json()["data"]))

    async def body(client: httpx.AsyncClient) -> None:
        await asyncio.gather(*(worker(client, n) for n in range(clients)))

    run(server, body)

    assert len(grants) >= len(resources) * 5, "too few grants for the test to mean anything"
    by_resource: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for resource, grant in grants:
        by_resource[resource].append((grant["ledger"]["logIndex"], grant["fencingToken"]))
    for resource, ordered in by_resource.items():
        tokens = [token for _, token in sorted(ordered)]
        assert tokens == list(range(1, len(tokens) + 1)), (resource, tokens)

    entries = ledger_entries(server)
    pseudonyms: dict[str, str] = {}
    for resource, grant in grants:
        entry = entries[grant["ledger"]["logIndex"]]
        assert entry["index"] == grant["ledger"]["logIndex"]
        assert (entry["kind"], entry["fencingToken"]) == ("acquire", grant["fencingToken"])
        assert pseudonyms.setdefault(resource, entry["resource"]) == entry["resource"]
    for resource, released in releases:
        entry = entries[released["ledger"]["logIndex"]]
        assert (entry["kind"], entry["resource"]) == ("release", pseudonyms[resource])
    ours = set(pseudonyms.values())
    kinds = Counter(e["kind"] for e in entries.values() if e["resource"] in ours)
    assert kinds == {"acquire": len(grants), "release": len(releases)}, kinds
