"""The Python client against a real `tenure serve`: leases kept alive, losses reported, safe
retries, receipts verified (docs/client.md)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api.client import AsyncClient, Client, LeaseHeld, LeaseLost, ReceiptInvalid
from tests.client_util import AsyncPartition, Partition, Recorder, Rewriter
from tests.conftest import ROOT, Server, rid
from verify.multikey import did_key
from verify.receipt import check_receipt

BLOCKED = ("fastapi", "pydantic", "sqlite3", "uvicorn", "starlette", "sqlite_utils", "ledger")


def test_client_imports_with_the_base_install_and_httpx_only() -> None:
    poison = "".join(f"sys.modules[{name!r}] = None\n" for name in BLOCKED)
    code = f"import sys\n{poison}from api.client import Client, AsyncClient\nprint('ok')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_lease_kept_alive_through_work_longer_than_its_ttl(server: Server) -> None:
    resource, refusals = rid("keep"), []
    async_outcomes: list[str] = []
    alongside = threading.Thread(target=lambda: async_outcomes.extend(_async_lease(server)))
    alongside.start()  # the asyncio variant runs in the same 7 s
    with Client(server.url) as client, Client(server.url) as rival:
        with client.lease(resource, "w1", ttl=2) as lease:
            token = lease.fencing_token
            for _ in range(7):  # 7 s of work under a 2 s lease
                time.sleep(1)
                with pytest.raises(LeaseHeld) as held:
                    rival.acquire(resource, "w2", ttl=2)
                refusals.append(held.value)
            assert not lease.lost
        assert all(refusal.held_by == ["w1"] for refusal in refusals)
        outcomes = [receipt["data"]["outcome"] for receipt in lease.receipts]
        assert outcomes[0] == "GRANTED" and outcomes[-1] == "RELEASED"
        assert outcomes.count("RENEWED") >= 8  # every 2/3 s: ~10
        assert {r["data"].get("fencingToken") for r in lease.receipts} == {token}
        assert client.get(resource).outcome == "FREE"
    alongside.join()
    assert async_outcomes.count("RENEWED") >= 5 and async_outcomes[-1] == "RELEASED"


def _async_lease(server: Server) -> list[str]:
    """`async with` a 2 s lease through 5 s of work, a rival refused; its outcomes. (A 1 s lease
    was lost before its first renewal when the answer to the acquire took over a second.)"""
    resource = rid("async")

    async def work() -> list[str]:
        async with AsyncClient(server.url) as client, AsyncClient(server.url) as rival:
            async with client.lease(resource, "a1", ttl=2) as lease:
                await asyncio.sleep(5)
                with pytest.raises(LeaseHeld):
                    await rival.acquire(resource, "a2")
                assert not lease.lost
            assert (await client.get(resource)).outcome == "FREE"
            return [receipt["data"]["outcome"] for receipt in lease.receipts]

    return asyncio.run(work())


def test_lease_lost_when_renewals_cannot_reach_the_server(server: Server) -> None:
    resource, partition, reported = rid("lost"), Partition(), threading.Event()
    seen: list[LeaseLost] = []

    def on_lost(error: LeaseLost) -> None:
        seen.append(error)
        reported.set()

    with Client(server.url, transport=partition) as client, Client(server.url) as rival:
        with (
            pytest.raises(LeaseLost),
            client.lease(resource, "w1", ttl=2, on_lost=on_lost) as lease,
        ):
            partition.down = True  # renewals paused: the server lets the lease expire
            assert reported.wait(5)
            assert lease.lost
            taken = rival.acquire(resource, "w2", ttl=2, wait=5)
            assert taken.fencing_token is not None and taken.fencing_token > lease.fencing_token
        assert "expired before a renewal was confirmed" in str(seen[0])


def test_an_async_lease_lost_mid_block_is_reported(server: Server) -> None:
    """`async with client.lease(...)`: renewals paused, the server lets the lease expire; the
    loss is reported (``on_lost``, ``lease.lost``) and leaving the block raises LeaseLost."""
    resource, seen = rid("alost"), []

    async def work() -> None:
        partition, reported = AsyncPartition(), asyncio.Event()

        def on_lost(error: LeaseLost) -> None:
            seen.append(error)
            reported.set()

        async with (
            AsyncClient(server.url, transport=partition) as client,
            AsyncClient(server.url) as rival,
        ):
            with pytest.raises(LeaseLost):
                async with client.lease(resource, "a1", ttl=2, on_lost=on_lost) as lease:
                    partition.down = True
                    await asyncio.wait_for(reported.wait(), 5)
                    assert lease.lost
                    taken = await rival.acquire(resource, "a2", ttl=2, wait=5)
                    assert taken.fencing_token is not None
                    assert taken.fencing_token > lease.fencing_token

    asyncio.run(work())
    assert len(seen) == 1 and "expired before a renewal was confirmed" in str(seen[0])


def test_lease_lost_reported_by_the_server(server: Server) -> None:
    resource, reported = rid("gone"), threading.Event()
    with Client(server.url) as client:
        lease = client.lease(resource, "w1", ttl=3, on_lost=lambda error: reported.set())
        with pytest.raises(LeaseLost) as lost, lease:
            client.release(resource, lease.owner_token)  # taken away behind the lease's back
            assert reported.wait(3)  # the next renewal, at 1 s, learns it
        assert lost.value.data["outcome"] in ("LOST", "NOT_ACTIVE")


def test_network_errors_are_retried_with_the_same_request_id(server: Server) -> None:
    recorder = Recorder(lambda body, n: "before" if n <= 2 else None)
    with Client(server.url, transport=recorder) as client:
        answer = client.acquire(rid("retry"), "w1")
    assert answer.outcome == "GRANTED" and len(recorder.bodies) == 3
    assert len({body["requestId"] for body in recorder.bodies}) == 1
    assert recorder.bodies[0]["requestId"].startswith("req_")


def test_a_dropped_renewal_answer_is_replayed_not_redone(server: Server) -> None:
    resource = rid("replay")
    with Client(server.url) as plain:
        grant = plain.acquire(resource, "w1")
    assert grant.owner_token is not None
    recorder = Recorder(lambda body, n: "after" if n == 1 else None)
    with Client(server.url, transport=recorder) as client:
        renewed = client.renew(resource, grant.owner_token, ttl=10)
    assert renewed.outcome == "RENEWED" and renewed.replayed
    assert recorder.bodies[0]["requestId"] == recorder.bodies[1]["requestId"]


def test_a_retry_after_a_dropped_grant_gets_the_owner_token_and_can_release(
    server: Server,
) -> None:
    resource = rid("dropped")
    recorder = Recorder(lambda body, n: "after" if n == 1 else None)
    with Client(server.url, transport=recorder) as client:
        grant = client.acquire(resource, "w1")
        assert grant.outcome == "GRANTED" and grant.replayed
        assert grant.owner_token is not None
        assert client.release(resource, grant.owner_token).outcome == "RELEASED"


def test_receipts_verify_against_the_pinned_keys(server: Server) -> None:
    keyring = Client(server.url).keys()
    trusted = {key["did"] for key in keyring["keys"]}
    with Client(server.url, trust=keyring) as client:
        with client.lease(rid("proof"), "w1", ttl=5) as lease:
            pass
        checkpoint = client.checkpoint()
    assert checkpoint["treeSize"] >= 2
    for receipt in lease.receipts:
        assert "ownerToken" not in receipt["data"]
        check_receipt(receipt, trusted)


def test_a_forged_answer_raises(server: Server) -> None:
    def forge(document: Any) -> Any:
        if isinstance(document, dict) and "fencingToken" in document.get("data", {}):
            document["data"]["fencingToken"] += 1
        return document

    keyring = Client(server.url).keys()
    forged = Client(server.url, trust=keyring, transport=Rewriter(forge))
    with forged, pytest.raises(ReceiptInvalid) as invalid:
        forged.acquire(rid("forged"), "w1")
    assert invalid.value.check.startswith("manifest")


def test_an_answer_to_another_request_raises(server: Server) -> None:
    saved: list[Any] = []

    def swap(document: Any) -> Any:
        saved.append(document)
        return saved[0]  # always the first answer, whatever was asked

    keyring = Client(server.url).keys()
    with Client(server.url, trust=keyring, transport=Rewriter(swap)) as client:
        client.get(rid("first"))
        with pytest.raises(ReceiptInvalid) as invalid:
            client.get(rid("second"))
    assert invalid.value.check == "manifest:tenure.request"


def test_an_untrusted_issuer_raises(server: Server) -> None:
    stranger = did_key(Ed25519PrivateKey.generate().public_key())
    with Client(server.url, trust=stranger) as client, pytest.raises(ReceiptInvalid) as invalid:
        client.get(rid("stranger"))
    assert invalid.value.check == "issuer"
