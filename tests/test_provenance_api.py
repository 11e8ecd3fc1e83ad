"""Every answer carries a verifiable credential (DESIGN §5), checked three ways: by tenure's own
verifier, by `POST /api/v1/verify-provenance`, and by Digital Bazaar's verifier in Node."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import httpx
import pytest

from ledger.keys.keyring import load_signing_keys
from ledger.keys.signer import Signer
from ledger.lease.provenance import Issuer
from tests.conftest import Server, rid
from tests.interop_util import node_available, run_node_verifier
from verify.dataintegrity import JCS_SUITE as JCS
from verify.receipt import verify_receipt

RDFC = {"Accept-Provenance": "eddsa-rdfc-2022"}


def trusted(api: httpx.Client) -> set[str]:
    return {key["did"] for key in api.get("/api/v1/keys").json()["keys"]}


def sample_responses(
    api: httpx.Client, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """A grant, a refusal, a read, a release, an error, a namespace and a scope answer."""
    r, scope = rid(), rid("scope")
    h = headers or {}
    granted = api.post(
        "/api/v1/lease/acquire", json={"resource": r, "holder": "w", "scope": scope}, headers=h
    )
    token = granted.json()["data"]["ownerToken"]
    answers = [
        granted,
        api.post("/api/v1/lease/acquire", json={"resource": r, "holder": "x"}, headers=h),
        api.post("/api/v1/lease/get", json={"resource": r}, headers=h),
        api.get(f"/api/v1/scopes/{scope}", headers=h),
        api.post("/api/v1/lease/release", json={"resource": r, "ownerToken": token}, headers=h),
        api.post(
            "/api/v1/lease/acquire", json={"resource": r, "holder": "w", "ttlSeconds": 0}, headers=h
        ),
        api.post("/api/v1/namespaces", headers=h),
    ]
    assert [a.status_code for a in answers] == [201, 409, 200, 200, 200, 422, 201]
    return [a.json() for a in answers]


def test_every_answer_verifies_with_the_python_verifier(api: httpx.Client) -> None:
    keys = trusted(api)
    for headers, suite in ((None, "eddsa-jcs-2022"), (RDFC, "eddsa-rdfc-2022")):
        for response in sample_responses(api, headers):
            assert response["_provenance"]["proof"]["cryptosuite"] == suite
            report = verify_receipt(response, keys)
            assert report.ok, report.as_data()


def test_owner_token_and_namespace_never_enter_the_credential(api: httpx.Client) -> None:
    for response in sample_responses(api):
        credential = json.dumps(response["_provenance"])
        for secret in (response["data"].get("ownerToken"), response["data"].get("namespace")):
            if secret:
                assert secret not in credential


def test_grant_receipt_states_the_answer_and_binds_names_to_pseudonyms(api: httpx.Client) -> None:
    granted = sample_responses(api)[0]
    subject = granted["_provenance"]["credentialSubject"]
    data = granted["data"]
    for name in ("op", "outcome", "resource", "holder", "fencingToken", "expiresAt", "ledger"):
        assert subject[name] == data[name]
    entry = api.get(
        "/api/v1/log/entries",
        params={"start": data["ledger"]["logIndex"], "end": data["ledger"]["logIndex"] + 1},
    )
    parsed = entry.json()["entries"][0]["entry"]
    assert subject["pseudonyms"] == {k: parsed[k] for k in ("tenant", "resource", "holder")}
    labels = [a["label"] for a in subject["manifest"]["assertions"]]
    assert labels == ["tenure.request", "tenure.data", "tenure.ledger.entry"]


@pytest.mark.parametrize(
    ("path", "value", "check"),
    [
        (("data", "fencingToken"), 99, "manifest:tenure.data"),
        (("data", "ledger", "rootHash"), "AAAA", "manifest:tenure.data"),
        (("_provenance", "credentialSubject", "fencingToken"), 99, "proof"),
        (("_provenance", "validFrom"), "2020-01-01T00:00:00Z", "proof"),
        (
            ("_provenance", "issuer"),
            "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
            "issuer",
        ),
        # a field tenure never issues fails the shape check before any signature work
        (("_provenance", "credentialSubject", "extra"), "slipped in", "format"),
        (("_provenance", "proof", "proofValue"), "z" + "1" * 87, "proof"),
    ],
)
def test_tampering_fails_with_the_check_named(
    api: httpx.Client, path: tuple[str, ...], value: Any, check: str
) -> None:
    keys = trusted(api)
    for headers in (None, RDFC):
        original = sample_responses(api, headers)[0]
        tampered = copy.deepcopy(original)
        target = tampered
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        failed = [c.name for c in verify_receipt(tampered, keys).checks if not c.ok]
        assert check in failed, failed
        served = api.post("/api/v1/verify-provenance", json=tampered).json()["data"]
        assert served["status"] == "fail"
        assert check in [c["check"] for c in served["checks"] if not c["ok"]]


def test_verify_endpoint_checks_the_entry_against_its_own_ledger(api: httpx.Client) -> None:
    granted = sample_responses(api)[0]
    served = api.post("/api/v1/verify-provenance", json=granted).json()["data"]
    assert served["status"] == "pass"
    names = {c["check"] for c in served["checks"]}
    assert {
        "proof",
        "issuer",
        "manifest:tenure.data",
        "manifest:tenure.ledger.entry",
        "ledger",
    } <= names


def test_untrusted_key_fails(api: httpx.Client) -> None:
    report = verify_receipt(
        sample_responses(api)[0], {"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}
    )
    assert not report.ok and [c.name for c in report.checks if not c.ok] == ["issuer"]


def test_bad_accept_provenance_is_422_naming_the_header(api: httpx.Client) -> None:
    headers = {"Accept-Provenance": "rsa"}
    response = api.post("/api/v1/lease/get", json={"resource": rid()}, headers=headers)
    assert response.status_code == 422
    assert response.json()["data"]["error"]["field"] == "Accept-Provenance"


def test_rotated_key_still_verifies_old_receipts(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        old = sample_responses(api)[0]
    fresh_server.stop()
    fresh_server.rotate_keys()
    fresh_server.start()
    with fresh_server.client() as api:
        new = sample_responses(api)[0]
        assert new["_provenance"]["issuer"] != old["_provenance"]["issuer"]
        for response in (old, new):
            assert (
                api.post("/api/v1/verify-provenance", json=response).json()["data"]["status"]
                == "pass"
            )


def test_a_receipt_signed_after_its_keys_retirement_fails(fresh_server: Server) -> None:
    """The server's verifier honours the key periods it publishes (DESIGN §5): a retired key,
    perhaps leaked, cannot vouch for an answer dated after its retirement."""
    fresh_server.start()
    with fresh_server.client() as api:
        old = sample_responses(api)[0]
    fresh_server.stop()
    fresh_server.rotate_keys()
    fresh_server.start()
    retired = load_signing_keys(fresh_server.root / "keys")[0]
    with fresh_server.client() as api:
        index = old["data"]["ledger"]["logIndex"]
        leaf = api.get("/api/v1/log/entries", params={"start": index, "end": index + 1})
        entry = base64.b64decode(leaf.json()["entries"][0]["leaf"])
        pseudonyms = old["_provenance"]["credentialSubject"].get("pseudonyms")
        later = Issuer(Signer(retired.private_key)).issue(
            old["data"], b"{}", entry, pseudonyms, "2099-01-01T00:00:00.000Z", JCS
        )
        forged = {"data": old["data"], "_provenance": later}
        report = api.post("/api/v1/verify-provenance", json=forged).json()["data"]
        assert report["status"] == "fail"
        failed = [check for check in report["checks"] if not check["ok"]]
        assert [check["check"] for check in failed] == ["issuer"], failed
        assert "retired" in failed[0]["detail"]
        again = api.post("/api/v1/verify-provenance", json=old).json()["data"]
        assert again["status"] == "pass"  # issued while the key was active: still good


@pytest.mark.skipif(
    not node_available(), reason="Node.js verifier not installed (npm install in tests/interop)"
)
def test_live_credentials_verify_with_digital_bazaar(api: httpx.Client) -> None:
    credentials = [r["_provenance"] for r in sample_responses(api) + sample_responses(api, RDFC)]
    contexts = api.get("/api/v1/contexts").json()
    results = run_node_verifier(credentials, contexts)
    assert [r["verified"] for r in results] == [True] * len(credentials), results
    tampered = copy.deepcopy(credentials[0])
    tampered["credentialSubject"]["fencingToken"] = 77
    assert run_node_verifier([tampered], contexts)[0]["verified"] is False
