"""Data Integrity proofs, JCS, offline JSON-LD and did:key: negative cases and properties."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from ledger.keys.signer import Signer
from verify import jcs
from verify.dataintegrity import SUITES, check_proof, verify_proof
from verify.errors import MalformedInput, SignatureError, UndefinedTerm, UnknownContext
from verify.jsonld import CONTEXT_FILES, canonicalize_rdfc, document_loader
from verify.multikey import (
    BASE58_ALPHABET,
    b58decode,
    b58encode,
    did_key,
    did_key_document,
    multibase_decode,
    multibase_encode,
    public_key_from_did,
    public_key_multibase,
    resolve_did_key,
    verification_method_id,
)

UNSIGNED = json.loads(
    (Path(__file__).parent / "vectors" / "vc-di-eddsa" / "unsigned.json").read_text()
)
CREATED = "2025-06-01T12:00:00Z"
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
SIGNER = Signer(KEY)

Tamper = Callable[[dict[str, Any]], None]


def _signed(suite: str) -> dict[str, Any]:
    return copy.deepcopy(SIGNER.sign(UNSIGNED, suite, created=CREATED))


def _flip_proof_value(doc: dict[str, Any]) -> None:
    signature = bytearray(multibase_decode(doc["proof"]["proofValue"]))
    signature[10] ^= 0x01
    doc["proof"]["proofValue"] = multibase_encode(bytes(signature))


def _swap_examples_context(doc: dict[str, Any]) -> None:
    # Same term names, other IRIs: the undefined-terms @vocab instead of the examples one.
    doc["@context"] = [
        "https://www.w3.org/ns/credentials/v2",
        "https://www.w3.org/ns/credentials/undefined-terms/v2",
    ]


TAMPERS: dict[str, Tamper] = {
    "subject field": lambda d: d["credentialSubject"].update(alumniOf="Another School"),
    "issuer": lambda d: d.update(issuer="https://vc.example/issuers/9999"),
    "proof created": lambda d: d["proof"].update(created="2025-06-01T12:00:01Z"),
    "proofValue byte": _flip_proof_value,
    "context": _swap_examples_context,
    "context removed": lambda d: d["@context"].pop(),
}


@pytest.mark.parametrize("suite", SUITES)
def test_signer_output_verifies(suite: str) -> None:
    signed = _signed(suite)
    result = verify_proof(signed)
    assert result.verified, result.error
    assert result.verification_method == SIGNER.verification_method
    assert ("@context" in signed["proof"]) == (suite == "eddsa-jcs-2022")


@pytest.mark.parametrize("suite", SUITES)
def test_signer_without_created_verifies(suite: str) -> None:
    signed = SIGNER.sign(UNSIGNED, suite)
    assert "created" not in signed["proof"]
    check_proof(signed)


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("tamper", TAMPERS)
def test_tampering_fails(suite: str, tamper: str) -> None:
    signed = _signed(suite)
    TAMPERS[tamper](signed)
    result = verify_proof(signed)
    assert not result.verified
    assert result.error
    with pytest.raises((SignatureError, MalformedInput)):
        check_proof(signed)


def test_extra_field_fails_under_jcs() -> None:
    signed = _signed("eddsa-jcs-2022")
    signed["credentialSubject"]["extra"] = "not signed"
    with pytest.raises(SignatureError):
        check_proof(signed)


def test_jcs_proof_context_must_prefix_document_context() -> None:
    signed = _signed("eddsa-jcs-2022")
    signed["proof"]["@context"] = list(reversed(signed["proof"]["@context"]))
    with pytest.raises(SignatureError, match="@context"):
        check_proof(signed)


def test_jcs_appended_context_verifies_per_spec() -> None:
    # vc-di-eddsa §3.3.2 step 4: the document's @context need only START with the proof's;
    # the document is then hashed with the proof's @context.
    signed = _signed("eddsa-jcs-2022")
    signed["@context"].append("https://www.w3.org/ns/credentials/undefined-terms/v2")
    check_proof(signed)


def test_undefined_term_refused_under_rdfc() -> None:
    doc = {**UNSIGNED, "@context": ["https://www.w3.org/ns/credentials/v2"]}
    doc.update(credentialSubject={"id": "did:example:abc"}, type=["VerifiableCredential"])
    canonicalize_rdfc(doc)  # fully defined: fine
    with pytest.raises(UndefinedTerm, match="undefinedThing"):
        SIGNER.sign({**doc, "undefinedThing": 1}, "eddsa-rdfc-2022")
    with pytest.raises(UndefinedTerm, match="Undefined"):
        SIGNER.sign({**doc, "type": ["VerifiableCredential", "Undefined"]}, "eddsa-rdfc-2022")
    with pytest.raises(UndefinedTerm, match="relative"):
        SIGNER.sign({**doc, "credentialSubject": {"id": "relative"}}, "eddsa-rdfc-2022")


def test_undefined_term_added_after_signing_is_refused_under_rdfc() -> None:
    doc = {**UNSIGNED, "@context": ["https://www.w3.org/ns/credentials/v2"]}
    doc.update(credentialSubject={"id": "did:example:abc"}, type=["VerifiableCredential"])
    signed = SIGNER.sign(doc, "eddsa-rdfc-2022", created=CREATED)
    check_proof(signed)
    signed["credentialSubject"]["smuggled"] = "would be dropped, so unsigned"
    result = verify_proof(signed)
    assert not result.verified
    assert result.error is not None and "smuggled" in result.error


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.update(type="Ed25519Signature2020"),
        lambda p: p.update(cryptosuite="eddsa-2022"),
        lambda p: p.update(proofPurpose="authentication"),
        lambda p: p.update(proofValue="u" + p["proofValue"][1:]),
        lambda p: p.update(proofValue=multibase_encode(bytes(63))),
        lambda p: p.update(proofValue="z0OIl"),
        lambda p: p.update(created="2025-13-01T00:00:00Z"),
        lambda p: p.update(created="2025-06-01T12:00:00"),
        lambda p: p.update(verificationMethod=SIGNER.did + "#other"),
        lambda p: p.update(verificationMethod="https://example.com/key"),
        lambda p: p.pop("proofValue"),
        lambda p: p.pop("verificationMethod"),
    ],
)
@pytest.mark.parametrize("suite", SUITES)
def test_malformed_proof_is_reported_not_raised(suite: str, mutate: Tamper) -> None:
    signed = _signed(suite)
    mutate(signed["proof"])
    result = verify_proof(signed)
    assert not result.verified
    with pytest.raises(MalformedInput):
        check_proof(signed)


@pytest.mark.parametrize("secured", [{}, {"proof": "x"}, {"proof": [{}]}, []])
def test_missing_or_odd_proof(secured: Any) -> None:
    assert not verify_proof(secured).verified


def test_wrong_key_fails() -> None:
    signed = _signed("eddsa-jcs-2022")
    other = Ed25519PrivateKey.from_private_bytes(bytes(32)).public_key()
    assert not verify_proof(signed, resolve_key=lambda _: other).verified


# --- did:key and Multikey ------------------------------------------------------------


def test_did_key_round_trip() -> None:
    public = KEY.public_key()
    did = did_key(public)
    assert did.startswith("did:key:z6Mk")
    assert SIGNER.did == did
    assert SIGNER.public_key_multibase == public_key_multibase(public) == did[len("did:key:") :]
    assert public_key_from_did(did) == public
    method = verification_method_id(did)
    assert method == f"{did}#{did[len('did:key:') :]}"
    assert resolve_did_key(method) == public


@pytest.mark.parametrize(
    "method",
    [
        SIGNER.did,  # no fragment
        SIGNER.did + "#",
        SIGNER.did + "#z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2",
        "did:web:example.com#key-1",
        "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme#zQ3s",
    ],
)
def test_resolve_did_key_refuses(method: str) -> None:
    with pytest.raises(MalformedInput):
        resolve_did_key(method)


def test_did_key_document() -> None:
    doc = did_key_document(SIGNER.did)
    method = doc["verificationMethod"][0]
    assert method["id"] == SIGNER.verification_method == doc["assertionMethod"][0]
    assert method["type"] == "Multikey"
    assert method["controller"] == doc["id"] == SIGNER.did
    assert method["publicKeyMultibase"] == SIGNER.public_key_multibase


# --- base58btc ------------------------------------------------------------------------


def _b58encode_reference(data: bytes) -> str:
    """Digit by digit, the textbook way (draft-msporny-base58-03 §3)."""
    number, digits = int.from_bytes(data, "big"), ""
    while number:
        number, digit = divmod(number, 58)
        digits = BASE58_ALPHABET[digit] + digits
    return "1" * (len(data) - len(data.lstrip(b"\x00"))) + digits


@given(st.binary(max_size=100))
def test_base58_matches_reference_and_round_trips(data: bytes) -> None:
    encoded = b58encode(data)
    assert encoded == _b58encode_reference(data)
    assert b58decode(encoded) == data


@given(st.binary(min_size=64, max_size=64))
def test_base58_of_signatures_matches_reference(data: bytes) -> None:
    assert b58encode(data) == _b58encode_reference(data)


def test_base58_at_the_lane_bounds() -> None:
    """Every lane full, every digit 57, the first number too large for the lanes, and each
    length of all-ones bytes on both sides of it (70 bytes go by lanes, 71 may not)."""
    edges = [58**96 - 1, 58**96, 58**64 - 1, 58**64, 58**32 - 1, 58**32, 2**512 - 1]
    cases = [n.to_bytes(72, "big") for n in edges]
    cases += [b"\xff" * size for size in range(80)] + [b"\x00" * size for size in range(5)]
    for data in cases:
        assert b58encode(data) == _b58encode_reference(data)


@given(st.binary(max_size=8).map(lambda b: b"\x00" * 3 + b))
def test_base58_leading_zeros(data: bytes) -> None:
    assert b58decode(b58encode(data)) == data


def test_base58_known_values() -> None:
    # draft-msporny-base58-03 §5 test vectors
    assert b58encode(b"Hello World!") == "2NEpo7TZRRrLZSi2U"
    assert b58encode(b"The quick brown fox jumps over the lazy dog.") == (
        "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z"
    )
    assert b58encode(bytes.fromhex("0000287fb4cd")) == "11233QC4"
    with pytest.raises(MalformedInput):
        b58decode("0OIl")


# --- fast JCS ---------------------------------------------------------------------------

_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=["Cs"]))
_key = st.one_of(_text, st.sampled_from(["\ue000", "\U0001f600", "\uffff", "\U00010000", "a"]))
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(_key, inner, max_size=5)),
    max_leaves=30,
)


@given(_json)
def test_fast_jcs_matches_rfc8785(value: Any) -> None:
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(MalformedInput):
            jcs.canonicalize(value)
        return
    assert jcs.canonicalize(value) == expected


def _plain_reference(value: Any) -> bool:
    """The fast path's rule, recursively (verify/jcs.py module doc): exact dicts under string
    keys without non-BMP characters, exact lists, strings, bools, None, safe integers."""
    kind = type(value)
    if kind is dict:
        keys_ok = all(type(k) is str and max(k, default="a") <= "\uffff" for k in value)
        return keys_ok and all(_plain_reference(v) for v in value.values())
    if kind is list:
        return all(_plain_reference(v) for v in value)
    if kind is int:
        return bool(-(2**53) < value < 2**53)
    return kind in (str, bool, type(None))


class _Str(str):
    pass


_odd = st.one_of(
    st.tuples(st.integers()), st.builds(_Str, _text), st.sampled_from([2**53, -(2**53), 1.5])
)
_any = st.recursive(
    st.one_of(_scalar, _odd),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(_key, st.integers(0, 3)), inner, max_size=5),
    ),
    max_leaves=30,
)


@given(_any)
def test_is_plain_is_the_rule(value: Any) -> None:
    assert jcs.is_plain(value) == _plain_reference(value)


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "\U0001f600": 2},  # UTF-16 order puts the surrogate pair first
        {"b": '\x00\x1f\x7f\u2028\u2029"\\/\b\f\n\r\t', "a": [True, False, None]},
        {"n": 2**53 - 1, "m": -(2**53) + 1},
        {"f": [1.0, 1e21, 1e-7, 0.1, -0.0, 123456789.5]},
        {"\u20ac": 1, "\r": 2, "1": 3, "\U0001f600": 4, "\u00f6": 5},  # RFC 8785 §3.2.3
    ],
)
def test_fast_jcs_edge_cases(value: Any) -> None:
    assert jcs.canonicalize(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("value", [{"x": 2**53}, {"x": float("nan")}, {"x": "\ud800"}, {1: 2}])
def test_fast_jcs_refuses(value: Any) -> None:
    with pytest.raises(MalformedInput):
        jcs.canonicalize(value)


# --- offline JSON-LD --------------------------------------------------------------------


def test_every_bundled_context_file_is_mapped() -> None:
    folder = resources.files("verify").joinpath("contexts")
    files = {entry.name for entry in folder.iterdir() if entry.name.endswith(".jsonld")}
    assert files == set(CONTEXT_FILES.values())


def test_loader_never_fetches() -> None:
    load = document_loader()
    assert load("https://www.w3.org/ns/credentials/v2", {})["documentUrl"].endswith("/v2")
    with pytest.raises(UnknownContext):
        load("https://schema.org/", {})
    with pytest.raises(UnknownContext, match=r"example\.net"):
        canonicalize_rdfc({"@context": "https://example.net/ctx", "a": 1})


def test_extra_context_is_served_and_pinned() -> None:
    iri = "https://tenure.test/ns/pinned-v1"
    context = {"@context": {"@vocab": "https://tenure.test/ns#"}}
    doc = {"@context": iri, "@id": "urn:x:1", "thing": 1}
    assert "<https://tenure.test/ns#thing>" in canonicalize_rdfc(doc, {iri: context})
    with pytest.raises(MalformedInput, match="different document"):
        canonicalize_rdfc(doc, {iri: {"@context": {"@vocab": "https://evil.test/#"}}})
    with pytest.raises(MalformedInput, match="bundled"):
        document_loader({"https://www.w3.org/ns/credentials/v2": context})
