"""tenure's credentials verify with an independent implementation (DESIGN §5).

The verifier is Digital Bazaar's ``@digitalbazaar/vc`` 7 with the eddsa-jcs-2022 and
eddsa-rdfc-2022 cryptosuites, run by Node.js offline (tests/interop/). Skipped when Node
or the npm packages are missing; scripts/test.sh installs them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.keys.signer import Signer
from tests.interop_util import SKIP_REASON, node_available, run_node_verifier
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE, SUITES, verify_proof
from verify.errors import UndefinedTerm
from verify.multikey import did_key_document

pytestmark = pytest.mark.skipif(not node_available(), reason=SKIP_REASON)

VECTORS = Path(__file__).parent / "vectors" / "vc-di-eddsa"
CONTEXT = [
    "https://www.w3.org/ns/credentials/v2",
    "https://www.w3.org/ns/credentials/examples/v2",
]


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _receipt(issuer: str, subject: dict[str, Any] | None = None) -> dict[str, Any]:
    """An unsigned credential shaped like tenure's receipts."""
    default_subject = {
        "id": "urn:uuid:8d7c2f0e-4a57-4c8e-9a43-0d7f1b2e6c11",
        "answer": {
            "resource": "res-4f6c0e0a9d2b4b7e",
            "holder": "worker-7",
            "fencingToken": 42,
            "granted": True,
            "released": False,
            "ttlSeconds": 30,
            "renewals": [1, 2, 3],
            "leaseDate": "2025-06-01",
            "expires": "2025-06-01T12:00:30Z",
        },
        "ledger": {"index": 1234, "treeSize": 1235, "rootHash": "9f" * 32},
        "manifest": {
            "claimGenerator": "tenure/0.1",
            "alg": "sha256",
            "assertions": [
                {"label": "tenure.request", "hash": "ab" * 32},
                {"label": "tenure.data", "hash": "cd" * 32},
                {"label": "tenure.ledger", "hash": "ef" * 32},
            ],
        },
    }
    return {
        "@context": list(CONTEXT),
        "type": ["VerifiableCredential"],
        "issuer": issuer,
        "validFrom": _now(),
        "credentialSubject": default_subject if subject is None else subject,
    }


def _signer() -> Signer:
    return Signer(Ed25519PrivateKey.generate())


def _sign(signer: Signer, unsecured: dict[str, Any], suite: str) -> dict[str, Any]:
    # A JSON round trip: exactly what a client of the HTTP API would receive.
    secured = signer.sign(unsecured, suite, created=_now())
    result: dict[str, Any] = json.loads(json.dumps(secured))
    return result


def _assert_all_verified(credentials: list[dict[str, Any]]) -> None:
    results = run_node_verifier(credentials, {})
    for credential, result in zip(credentials, results, strict=True):
        suite = credential["proof"]["cryptosuite"]
        assert result == {"verified": True, "cryptosuite": suite, "error": None}, result


def _vector(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    return result


# (a) The W3C vc-di-eddsa vectors.


def test_w3c_vectors_verify_in_node() -> None:
    credentials = [
        _vector("eddsa-jcs-2022/signedJCS.json"),
        _vector("eddsa-rdfc-2022/signedDataInt.json"),
    ]
    did = "did:key:" + _vector("keyPair.json")["publicKeyMultibase"]
    # The vectors' issuer is https://vc.example/issuers/5678, not their did:key, so the
    # key's DID document comes from Python (verify.multikey.did_key_document) and the
    # issuer-must-control-the-key check is off; the key must still be an assertionMethod.
    results = run_node_verifier(
        credentials, {}, did_documents={did: did_key_document(did)}, require_issuer_match=False
    )
    assert [r["cryptosuite"] for r in results] == [JCS_SUITE, RDFC_SUITE]
    assert all(r["verified"] for r in results), results

    # With the default purpose the https issuer does not control the did:key.
    strict = run_node_verifier(credentials, {}, did_documents={did: did_key_document(did)})
    for result in strict:
        assert not result["verified"]
        assert "issuer must match the verification method controller" in result["error"]


# (b) Credentials tenure's Signer makes, with a fresh key.


def test_tenure_signed_receipts_verify_in_node() -> None:
    signer = _signer()
    credentials = [_sign(signer, _receipt(signer.did), suite) for suite in SUITES]
    for credential in credentials:
        assert verify_proof(credential).verified
    _assert_all_verified(credentials)


def test_receipt_with_extra_context_verifies_in_node() -> None:
    # Contexts beyond the bundled ones reach Node through the `contexts` argument.
    iri = "https://tenure.example/ns/interop-test/v1"
    extra = {"@context": {"@protected": True, "leaseNote": "https://tenure.example/ns#leaseNote"}}
    signer = _signer()
    unsecured = _receipt(signer.did, {"leaseNote": "hello"})
    unsecured["@context"] = [*CONTEXT[:1], iri]
    credentials = [
        json.loads(json.dumps(signer.sign(unsecured, suite, _now(), {iri: extra})))
        for suite in SUITES
    ]
    results = run_node_verifier(credentials, {iri: extra})
    assert all(r["verified"] for r in results), results
    # Without it, Node refuses to fetch the context and names the URL.
    missing = run_node_verifier(credentials[1:], {})
    assert not missing[0]["verified"]
    assert f"refusing unknown URL {iri}" in missing[0]["error"]


PORTABLE_VALUES: dict[str, Any] = {
    "unicode": "é ü 中文 😀 \u2028 \u0085",
    "escapes": 'line\nbreak\ttab "quoted" back\\slash\r',
    "😀key": "a non-BMP character in a key",
    "ints": [0, -5, 2**53 - 1, -(2**53 - 1)],
    "floats": [1.5, 0.1, 2.0, 1e21, 123456789.125, -0.0],
    "null": None,
    "emptyObject": {},
    "emptyList": [],
    "emptyString": "",
    "nestedLists": [[1, 2], [3], [{"a": 1}, {"a": 1}]],
    "timestamp": "2025-06-01T12:00:00.123456+02:00",
}


def test_edge_values_verify_in_node() -> None:
    signer = _signer()
    credentials = [_sign(signer, _receipt(signer.did, PORTABLE_VALUES), s) for s in SUITES]
    _assert_all_verified(credentials)


# (c) Tampering.


def test_tampered_credentials_fail_in_node() -> None:
    signer = _signer()
    credentials = []
    for suite in SUITES:
        tampered = _sign(signer, _receipt(signer.did), suite)
        tampered["credentialSubject"]["answer"]["fencingToken"] = 43
        assert not verify_proof(tampered).verified
        credentials.append(tampered)
    for result in run_node_verifier(credentials, {}):
        assert not result["verified"]
        assert "Invalid signature" in result["error"], result


# (d) The key must be the issuer's.


def test_proof_by_another_did_key_fails_in_node() -> None:
    issuer, other = _signer(), _signer()
    credentials = [_sign(other, _receipt(issuer.did), suite) for suite in SUITES]
    # Only the issuer's did:key is resolvable: the other key's document is never loaded.
    for result in run_node_verifier(credentials, {}):
        assert not result["verified"]
        assert f"refusing unknown URL {other.verification_method}" in result["error"]
    # Even when the other key's DID document is supplied, it does not control the issuer.
    documents = {other.did: did_key_document(other.did)}
    for result in run_node_verifier(credentials, {}, did_documents=documents):
        assert not result["verified"]
        assert "issuer must match the verification method controller" in result["error"]
    # The same credentials, re-signed by the issuer's key, verify.
    _assert_all_verified(
        [_sign(issuer, _receipt(issuer.did), suite) for suite in SUITES],
    )


def test_credential_status_is_not_silently_accepted() -> None:
    signer = _signer()
    unsecured = _receipt(signer.did)
    unsecured["credentialStatus"] = {"id": "urn:uuid:1", "type": "BitstringStatusListEntry"}
    results = run_node_verifier([_sign(signer, unsecured, JCS_SUITE)], {})
    assert not results[0]["verified"]
    assert "checkStatus" in results[0]["error"]


# Disagreements found with this harness. The two on tenure's side are fixed and pinned below;
# the Node-side bugs stay as strict xfails, so an upstream fix shows up as an XPASS.


# Control characters are escaped as RDFC-1.0 canonical N-Quads require (verify/jsonld.py).
def test_rdfc_control_characters_in_literals() -> None:
    signer = _signer()
    subject = {"text": "a\u0001b\u007fc\bd\fe\u000bf"}
    credential = _sign(signer, _receipt(signer.did, subject), RDFC_SUITE)
    _assert_all_verified([credential])


# IRIs with characters N-Quads forbids are refused before signing (verify/jsonld.py), so no
# credential Node could read differently is ever issued; a portable one is checked in Node.
def test_rdfc_iri_characters_are_refused_and_portable_ones_verify() -> None:
    signer = _signer()
    with pytest.raises(UndefinedTerm, match=r"a\|b"):
        _sign(signer, _receipt(signer.did, {"a|b": 1}), RDFC_SUITE)
    portable = _sign(signer, _receipt(signer.did, {"text": "a|b"}), RDFC_SUITE)
    _assert_all_verified([portable])


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="rdf-canonize 5 (Node) sorts N-Quads by UTF-16 code unit, not code point as "
    "RDFC-1.0 requires: a non-BMP character and one in U+E000-U+FFFF sort differently",
)
def test_rdfc_code_point_order_node_bug() -> None:
    signer = _signer()
    credential = _sign(signer, _receipt(signer.did, {"tags": ["😀", "\ufb33"]}), RDFC_SUITE)
    assert verify_proof(credential).verified
    _assert_all_verified([credential])


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="jsonld.js 9 (Node) takes a number whose String() has no '.' (1e-7) for an "
    'integer and writes "0"^^xsd:integer; JSON-LD and pyld write "1.0E-7"^^xsd:double',
)
def test_rdfc_small_float_node_bug() -> None:
    signer = _signer()
    credential = _sign(signer, _receipt(signer.did, {"ratio": 1e-7}), RDFC_SUITE)
    assert verify_proof(credential).verified
    _assert_all_verified([credential])
