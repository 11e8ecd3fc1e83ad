"""Crash safety: SIGKILL the server mid-load, restart it, and check what it promised (DESIGN §2.2).

An acknowledged answer is a promise: its ledger entry is durable at the index and with the leaf
hash the answer named, a fencing token is never issued again, and a lease it granted is still
held after a restart until its TTL runs out. The ledger itself stays gap-free and its Merkle
root, recomputed from the SQLite file, is the one the restarted server reports.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import random
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.conftest import Server, rid

CYCLES = 3
WORKERS = 6
LOAD_TTL = 2  # short, so leases orphaned by the kill lapse quickly after the restart
KILL_AFTER = 150  # acknowledged answers per cycle before the SIGKILL
MAX_STEPS = 400  # per worker per cycle: the loop is bounded even if the kill never lands


@dataclass
class Acked:
    """What the clients were told: every acknowledged answer and the top token per resource."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    top_token: dict[str, int] = field(default_factory=dict)
    cut_off: int = 0  # clients whose request was in flight (or refused) when the server died

    def note(self, resource: str, data: dict[str, Any]) -> None:
        if "logIndex" in data["ledger"]:
            self.answers.append(data)
        if "fencingToken" in data:
            token = data["fencingToken"]
            self.top_token[resource] = max(self.top_token.get(resource, 0), token)


def read_ledger(server: Server) -> list[bytes]:
    """The leaves in index order; asserts the indexes run 0..n-1 without a gap."""
    uri = f"file:{server.data / 'tenure.db'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        rows = conn.execute("SELECT idx, leaf FROM entries ORDER BY idx").fetchall()
    assert [idx for idx, _ in rows] == list(range(len(rows))), "the ledger has a gap"
    return [bytes(leaf) for _, leaf in rows]


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def merkle_root(hashes: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH over leaf hashes, written out here independently of the server."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    split = 1
    while split * 2 < len(hashes):
        split *= 2
    left, right = merkle_root(hashes[:split]), merkle_root(hashes[split:])
    return hashlib.sha256(b"\x01" + left + right).digest()


async def load(url: str, resources: list[str], acked: Acked, enough: asyncio.Event) -> None:
    """Acquire→release cycles from several clients until the server dies under them."""
    count = 0

    async def worker(client: httpx.AsyncClient, n: int) -> None:
        nonlocal count
        rng = random.Random()
        for _ in range(MAX_STEPS):
            resource = rng.choice(resources)
            body = {"resource": resource, "holder": f"w{n}", "ttlSeconds": LOAD_TTL}
            try:
                got = await client.post("/api/v1/lease/acquire", json=body)
                if got.status_code != 201:
                    assert got.status_code == 409, got.text
                    continue
                acked.note(resource, got.json()["data"])
                owner = got.json()["data"]["ownerToken"]
                body = {"resource": resource, "ownerToken": owner}
                gone = await client.post("/api/v1/lease/release", json=body)
                assert gone.status_code in (200, 409), gone.text  # 409: it lapsed (NOT_ACTIVE)
                if gone.status_code == 200:
                    acked.note(resource, gone.json()["data"])
            except httpx.TransportError:
                acked.cut_off += 1  # the server was killed: what was in flight is unacknowledged
                return
            count += 2
            if count >= KILL_AFTER:
                enough.set()

    limits = httpx.Limits(max_connections=WORKERS)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        await asyncio.gather(*(worker(client, n) for n in range(WORKERS)))


async def load_then_kill(server: Server, resources: list[str], acked: Acked) -> None:
    enough = asyncio.Event()
    traffic = asyncio.create_task(load(server.url, resources, acked, enough))
    await asyncio.wait_for(enough.wait(), timeout=60)
    await asyncio.to_thread(server.kill)
    await asyncio.wait_for(traffic, timeout=60)
    assert acked.cut_off > 0, "the kill should land while clients are still sending"
    acked.cut_off = 0


def acquire(client: httpx.Client, resource: str, holder: str, **extra: Any) -> httpx.Response:
    body = {"resource": resource, "holder": holder, **extra}
    return client.post("/api/v1/lease/acquire", json=body)


def test_sigkill_mid_load_loses_no_acknowledged_entry_and_never_reissues_a_token(
    fresh_server: Server,
) -> None:
    server = fresh_server.start()
    resources = [rid("crash") for _ in range(4)]
    acked = Acked()

    for cycle in range(CYCLES):
        # A long lease taken just before the load: the crash must not free it.
        keeper, keeper_holder = rid("keeper"), f"keeper-{cycle}"
        with server.client() as client:
            kept = acquire(client, keeper, keeper_holder, ttlSeconds=600)
        assert kept.status_code == 201, kept.text
        acked.note(keeper, kept.json()["data"])

        asyncio.run(load_then_kill(server, resources, acked))
        server.restart()

        # Every acknowledged answer is in the ledger at its index, with its leaf hash.
        leaves = read_ledger(server)
        for data in acked.answers:
            index = data["ledger"]["logIndex"]
            assert index < len(leaves), f"acknowledged entry {index} lost (cycle {cycle})"
            assert base64.b64encode(leaf_hash(leaves[index])).decode() == data["ledger"]["leafHash"]
            entry = json.loads(leaves[index])
            assert entry["index"] == index
            if data["op"] == "acquire":
                assert (entry["kind"], entry["fencingToken"]) == ("acquire", data["fencingToken"])

        with server.client() as client:
            # The restarted server's tree is exactly the file's (a prefix, if it appended since).
            ledger = client.get("/healthz").json()["data"]["ledger"]
            size = ledger["treeSize"]
            leaves = read_ledger(server)
            assert len(acked.answers) > 0 and size <= len(leaves)
            root = merkle_root([leaf_hash(leaf) for leaf in leaves[:size]])
            assert base64.b64encode(root).decode() == ledger["rootHash"]

            # The pre-crash lease is still held, by its holder, under its fencing token.
            taken = acquire(client, keeper, "someone-else", ttlSeconds=600)
            assert taken.status_code == 409, taken.text
            assert taken.json()["data"]["outcome"] == "HELD"
            assert taken.json()["data"]["heldBy"] == [keeper_holder]
            view = client.post("/api/v1/lease/get", json={"resource": keeper}).json()["data"]
            assert [(h["holder"], h["fencingToken"]) for h in view["holders"]] == [
                (keeper_holder, kept.json()["data"]["fencingToken"])
            ]

            # New grants are fenced above everything acknowledged before the crash. Leases the
            # kill orphaned lapse within LOAD_TTL seconds; the wait op blocks until then.
            for resource in resources:
                got = acquire(client, resource, "after-restart", waitSeconds=LOAD_TTL + 10)
                assert got.status_code == 201, got.text
                data = got.json()["data"]
                assert data["fencingToken"] > acked.top_token.get(resource, 0)
                acked.note(resource, data)
                owner = data["ownerToken"]
                gone = client.post(
                    "/api/v1/lease/release", json={"resource": resource, "ownerToken": owner}
                )
                assert gone.status_code == 200, gone.text
                acked.note(resource, gone.json()["data"])

            # The keeper's owner proof survived too: it can still release its lease.
            owner = kept.json()["data"]["ownerToken"]
            gone = client.post(
                "/api/v1/lease/release", json={"resource": keeper, "ownerToken": owner}
            )
            assert gone.status_code == 200 and gone.json()["data"]["outcome"] == "RELEASED"
            acked.note(keeper, gone.json()["data"])

    assert len(acked.answers) >= CYCLES * KILL_AFTER
