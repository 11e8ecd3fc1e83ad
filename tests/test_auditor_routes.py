"""What the log gives auditors beyond the monitor and the explorer: the paged list of signed
checkpoints, and a bundle that proves the caller's own saved receipt."""

from __future__ import annotations

import copy

import httpx
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.conftest import Server, lease, rid
from verify.bundle import verify_bundle
from verify.multikey import public_key_from_did
from verify.note import verify_note


def trusted(client: httpx.Client) -> set[str]:
    return {key["did"] for key in client.get("/api/v1/keys").json()["keys"]}


def test_checkpoints_are_listed_page_by_page(fresh_server: Server) -> None:
    fresh_server.args = ["--checkpoint-interval", "3600"]  # only the ones asked for below
    with fresh_server.start().client() as client:
        sizes = []
        for _ in range(3):
            lease(client, "acquire", resource=rid(), holder="w")
            sizes.append(client.get("/api/v1/log/checkpoint").json()["treeSize"])
        first = client.get("/api/v1/log/checkpoints", params={"limit": 2}).json()
        rest = client.get("/api/v1/log/checkpoints", params={"start": first["next"]}).json()
        bad = client.get("/api/v1/log/checkpoints", params={"limit": 101})
        keys = client.get("/api/v1/keys").json()["keys"]
    listed = first["checkpoints"] + rest["checkpoints"]
    assert [c["treeSize"] for c in listed] == sizes == [1, 2, 3]
    assert first["next"] == 3 and rest["next"] is None
    public = public_key_from_did(keys[0]["did"]).public_bytes(Encoding.Raw, PublicFormat.Raw)
    for checkpoint in listed:
        assert checkpoint["keyDid"] == keys[0]["did"]
        verify_note(checkpoint["note"], checkpoint["origin"], public)
    assert bad.status_code == 400 and bad.json()["data"]["error"]["field"] == "limit"


def test_a_saved_receipt_comes_back_as_a_bundle_proving_it(server: Server) -> None:
    with server.client() as client:
        saved = lease(client, "acquire", resource=rid(), holder="w").json()
        for _ in range(3):
            lease(client, "acquire", resource=rid(), holder="w")
        answer = client.post("/api/v1/log/bundle", json=saved)
        assert answer.status_code == 200, answer.text
        bundle = answer.json()
        keys = trusted(client)
        not_a_receipt = client.post("/api/v1/log/bundle", json={"data": {}, "_provenance": {}})
    assert "ownerToken" not in bundle["receipt"]["data"]
    assert bundle["receipt"]["_provenance"] == saved["_provenance"]  # the caller's own
    assert bundle["inclusion"]["index"] == saved["data"]["ledger"]["logIndex"]
    report = verify_bundle(bundle, keys)
    assert report.ok, report.as_data()
    assert "manifest:tenure.ledger.entry" in [c.name for c in report.checks]
    tampered = copy.deepcopy(bundle)
    tampered["receipt"]["data"]["fencingToken"] += 1
    assert not verify_bundle(tampered, keys).ok
    assert not_a_receipt.status_code == 422
    assert not_a_receipt.json()["data"]["error"]["field"] == "data.ledger.logIndex"
