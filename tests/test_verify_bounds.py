"""The verifier's bounds: what tenure never issues is refused before any canonicalization, and
RDF canonicalization itself has a work budget (RDFC-1.0 §4.4), so no input costs seconds."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.keys.signer import Signer
from ledger.lease.provenance import Issuer, canonical_request
from verify.bundle import verify_document
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE
from verify.errors import MalformedInput
from verify.jsonld import canonicalize_rdfc

NOW = "2026-01-01T00:00:00.000Z"
DATA: dict[str, Any] = {
    "op": "acquire",
    "outcome": "granted",
    "status": "pass",
    "granted": True,
    "resource": "db",
    "holder": "w1",
    "fencingToken": 3,
    "ledger": {
        "treeSize": 5,
        "rootHash": "A" * 43 + "=",
        "logIndex": 4,
        "leafHash": "B" * 43 + "=",
    },
    "ownerToken": "secret-owner-token",
}

SIGNER = Signer(Ed25519PrivateKey.generate())


def receipt(suite: str = RDFC_SUITE, data: dict[str, Any] | None = None) -> dict[str, Any]:
    body = data or DATA
    request = canonical_request("POST", "/api/v1/leases/db/acquire", b'{"holder":"w1"}')
    credential = Issuer(SIGNER).issue(body, request, b'{"x":1}', None, NOW, suite)
    return copy.deepcopy({"data": body, "_provenance": credential})


def with_extra_assertions(document: dict[str, Any], count: int) -> dict[str, Any]:
    forged = copy.deepcopy(document)
    assertions = forged["_provenance"]["credentialSubject"]["manifest"]["assertions"]
    assertions += [{"label": f"x.{i}", "hash": "C" * 43 + "="} for i in range(count)]
    return forged


def failed(report: Any) -> dict[str, str]:
    return {check.name: check.detail for check in report.checks if not check.ok}


def test_a_genuine_rdfc_receipt_still_passes() -> None:
    report = verify_document(receipt(), {SIGNER.did})
    assert report.ok, failed(report)


@pytest.mark.parametrize("count", [100, 500, 2000])
@pytest.mark.parametrize("suite", [RDFC_SUITE, JCS_SUITE])
def test_extra_assertions_are_refused_in_milliseconds(count: int, suite: str) -> None:
    forged = with_extra_assertions(receipt(suite), count)
    started = time.perf_counter()
    report = verify_document(forged, {SIGNER.did})
    elapsed = time.perf_counter() - started
    assert not report.ok
    assert any(word in failed(report)["format"] for word in ("manifest", "JSON values"))
    assert elapsed < 0.25, elapsed  # ~1-5 ms alone; headroom for a loaded 2-core machine


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        (("credentialSubject",), {"extra": 1}, "credentialSubject has fields"),
        ((), {"evidence": {}}, "credential has fields"),
        (("proof",), {"nonce": "n"}, "proof has fields"),
        (("credentialSubject", "manifest"), {"note": "x"}, "manifest has fields"),
    ],
)
def test_fields_tenure_never_issues_are_named(
    where: tuple[str, ...], value: dict[str, Any], named: str
) -> None:
    forged = receipt()
    section = forged["_provenance"]
    for name in where:
        section = section[name]
    section.update(value)
    assert named in failed(verify_document(forged, {SIGNER.did}))["format"]


def test_repeated_or_misshapen_assertions_are_refused() -> None:
    forged = receipt()
    assertions = forged["_provenance"]["credentialSubject"]["manifest"]["assertions"]
    assertions[2] = dict(assertions[1])
    assert "repeated" in failed(verify_document(forged, {SIGNER.did}))["format"]
    forged = receipt()
    forged["_provenance"]["credentialSubject"]["manifest"]["assertions"][0]["extra"] = 1
    assert "{label, hash}" in failed(verify_document(forged, {SIGNER.did}))["format"]


def test_huge_numbers_are_a_failed_check_not_a_crash() -> None:
    for value in (2**63, 2**64 + 1, -(2**70)):
        forged = receipt()
        forged["data"]["ledger"]["logIndex"] = value
        forged["_provenance"]["credentialSubject"]["ledger"]["logIndex"] = value
        assert not verify_document(forged, {SIGNER.did}).ok


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = {"a": deep}
    forged = receipt()
    forged["_provenance"]["credentialSubject"]["error"] = deep
    assert not verify_document(forged, {SIGNER.did}).ok
    forged = receipt()
    forged["data"]["nested"] = deep
    assert not verify_document(forged, {SIGNER.did}).ok
    with pytest.raises(MalformedInput, match="deeper"):
        canonicalize_rdfc({"@context": {"@vocab": "https://example.org/"}, "a": deep})


def poison_graph(nodes: int) -> dict[str, Any]:
    """A clique of blank nodes, all alike: the shape that makes Hash N-Degree Quads explode."""
    ids = [f"_:n{i}" for i in range(nodes)]
    graph = [{"@id": a, "https://example.org/p": [{"@id": b} for b in ids if b != a]} for a in ids]
    return {"@context": {"@vocab": "https://example.org/"}, "@graph": graph}


def test_rdfc_work_is_capped_on_poison_graphs() -> None:
    started = time.perf_counter()
    with pytest.raises(MalformedInput, match=r"RDFC-1\.0|blank nodes|quads"):
        canonicalize_rdfc(poison_graph(12))
    assert time.perf_counter() - started < 1.0
    canonicalize_rdfc(poison_graph(3))  # small symmetric graphs still canonicalize


@pytest.mark.parametrize("count", [100, 500, 2000])
def test_rdfc_alone_refuses_a_shape_the_shape_check_missed(count: int) -> None:
    """Canonicalization is bounded by itself, whatever check ran before it."""
    credential = with_extra_assertions(receipt(), count)["_provenance"]
    unsecured = {k: v for k, v in credential.items() if k != "proof"}
    started = time.perf_counter()
    with pytest.raises(MalformedInput, match=r"blank nodes|quads|RDFC-1\.0"):
        canonicalize_rdfc(unsecured)
    assert time.perf_counter() - started < 1.0
