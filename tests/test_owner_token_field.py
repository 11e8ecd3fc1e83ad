"""The owner token is a field of the answer, never part of its ``data``: not stored with the
request (rule 12) or a waiter's grant, not hashed into the receipt; the edge writes it last in
``data`` on the wire, in the bytes the answer always had (DESIGN §1, §5; decisions/0024)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.backends import open_storage
from ledger.keys.signer import Signer
from ledger.lease.calls import Answer, LeaseCall
from ledger.lease.provenance import HAVE_NATIVE, Issuer
from ledger.writer.service import LeaseService
from tests.conftest import lease, rid
from tests.names_key import NAMES
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE

T0 = 1_800_000_000_000


def test_no_answer_of_the_model_holds_its_owner_token_in_data(tmp_path: Path) -> None:
    """A fresh grant, a grant by requestId, its replay and a waiter's grant each carry the
    token as ``owner_token``; neither their data nor the stored request answer holds it."""

    async def scenario() -> list[Answer]:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, b"s" * 32, clock=lambda: T0)
        await service.start()
        fresh = await service.lease(LeaseCall("acquire", "t", "a", holder="w"))
        by_id = LeaseCall("acquire", "t", "b", holder="w", request_id=rid("req"))
        first, replay = await service.lease(by_id), await service.lease(by_id)
        waiting = asyncio.ensure_future(
            service.lease(LeaseCall("wait", "t", "a", holder="v", wait_seconds=30))
        )
        await asyncio.sleep(0.01)  # the waiter joins the queue
        await service.lease(LeaseCall("release", "t", "a", owner_token=fresh.owner_token))
        served = await waiting
        with storage.transaction() as tx:
            stored = tx.request("t", by_id.request_id or "")
        await service.stop()
        storage.close()
        assert stored is not None and "ownerToken" not in json.dumps(stored.answer)
        return [fresh, first, replay, served]

    answers = asyncio.run(scenario())
    assert [a.data["outcome"] for a in answers] == ["GRANTED"] * 4
    assert all(isinstance(a.owner_token, str) for a in answers)
    assert all("ownerToken" not in a.data for a in answers)
    assert answers[2].data["replayed"] is True and answers[2].owner_token == answers[1].owner_token


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    return TestClient(create_app(settings, lambda: T0))


def test_the_wire_shows_the_token_last_in_data_and_the_receipt_hashes_none(
    client: TestClient,
) -> None:
    with client:
        answer = lease(client, "acquire", resource=rid(), holder="w")
        data = answer.json()["data"]
        report = client.post("/api/v1/verify-provenance", json=answer.json()).json()["data"]
    assert answer.status_code == 201 and list(data)[-1] == "ownerToken"
    assert answer.content.index(b'"ownerToken"') < answer.content.index(b'"_provenance"')
    assert report["status"] == "pass", report


@pytest.mark.parametrize("native", [True, False] if HAVE_NATIVE else [False])
@pytest.mark.parametrize("suite", [JCS_SUITE, RDFC_SUITE])
def test_the_writer_puts_the_token_where_data_had_it(native: bool, suite: str) -> None:
    """Same bytes as an answer whose data held the token (the writer leaves it out of the
    hash): what receipts and callers have always seen."""
    issuer = Issuer(Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32)))), native=native)
    data: dict[str, Any] = {"status": "pass", "op": "acquire", "outcome": "GRANTED"}
    data |= {"resource": "r", "fencingToken": 7, "ledger": {"treeSize": 1, "rootHash": "x"}}
    now, token = "2027-01-15T08:00:00.000Z", "tok_" + "A" * 43
    made = issuer.encode_answer(data, b"{}", b"{}", None, now, suite, token)
    assert made == issuer.encode_answer(
        data | {"ownerToken": token}, b"{}", b"{}", None, now, suite
    )
    assert "ownerToken" not in data
