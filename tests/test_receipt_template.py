"""The issuing fast path signs exactly what the reference path signs.

``Issuer.issue`` splices the credential's canonical bytes from a frame and the proof
configuration's from a template, and encodes a plain subject without walking it again. Ed25519 is
deterministic, so the whole credential — every member and the ``proofValue`` — must equal the one
built the reference way (dicts, ``canonical_data``, ``Signer.sign`` → ``hash_data`` →
``verify.jcs.canonicalize``) for any answer, plain or not: one differing byte changes the signature.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from api.requests import refuse_duplicate_keys
from ledger.keys.signer import Signer
from ledger.lease.provenance import CLAIM_GENERATOR, Issuer, canonical_request, digest
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE, verify_proof
from verify.errors import MalformedInput
from verify.jcs import canonicalize
from verify.receipt import (
    CONTEXTS,
    LABEL_DATA,
    LABEL_ENTRY,
    LABEL_REQUEST,
    LABEL_STATE,
    SUBJECT_FIELDS,
    canonical_data,
    state_bytes,
)

SIGNER = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
ISSUER = Issuer(SIGNER)
REQUEST = canonical_request("POST", "/api/v1/lease/acquire", b'{"resource":"r","holder":"h"}')


def reference(
    data: dict[str, Any], entry: bytes | None, names: dict[str, str] | None, now: str
) -> dict[str, Any]:
    """The credential as tenure first issued it: built as dicts, canonicalized whole."""
    subject: dict[str, Any] = {"type": "LeaseAnswer"}
    subject.update((name, data[name]) for name in SUBJECT_FIELDS if name in data)
    for name in ("ledger", "error"):
        if name in data:
            subject[name] = data[name]
    if names:
        subject["pseudonyms"] = names
    ledger = (LABEL_ENTRY, entry) if entry is not None else (LABEL_STATE, state_bytes(data))
    assertions = [
        {"label": LABEL_REQUEST, "hash": digest(REQUEST)},
        {"label": LABEL_DATA, "hash": digest(canonical_data(data))},
        {"label": ledger[0], "hash": digest(ledger[1])},
    ]
    subject["manifest"] = {"claimGenerator": CLAIM_GENERATOR, "alg": "sha256"}
    subject["manifest"]["assertions"] = assertions
    credential = {
        "@context": CONTEXTS,
        "type": ["VerifiableCredential", "LeaseReceipt"],
        "issuer": SIGNER.did,
        "validFrom": now,
        "credentialSubject": subject,
    }
    return SIGNER.sign(credential, JCS_SUITE, created=now)


# JSON values, plain and not: floats and integers past 2**53 take the reference JCS path (or are
# refused), non-BMP keys sort differently by UTF-16 code units, lone surrogates are refused.
keys = st.text(max_size=6) | st.sampled_from(["a", "\U0001f600", "\ue000", "é", "B"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
ledgers = st.fixed_dictionaries(
    {"treeSize": st.integers(0, 2**40), "rootHash": st.text(max_size=44)},
    optional={"logIndex": st.integers(0, 2**40), "leafHash": st.text(max_size=44)},
)
answers = st.fixed_dictionaries(
    {"status": st.sampled_from(["pass", "fail", "unknown"]), "ledger": ledgers},
    optional={
        **{name: values for name in SUBJECT_FIELDS if name != "status"},
        "ownerToken": st.text(max_size=8),
        "namespace": st.text(max_size=8),
        "error": values,
        "holders": values,
        "witnesses": values,
        "extra\U0001f600": values,
    },
)
pseudonyms = st.none() | st.dictionaries(keys, st.text(max_size=10), max_size=3)
moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2999, 12, 31))


def stamp(moment: datetime) -> str:
    return moment.replace(tzinfo=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@settings(max_examples=400, deadline=None)
@given(answers, st.none() | st.binary(max_size=40), pseudonyms, moments)
def test_issued_credentials_equal_the_reference_byte_for_byte(
    data: dict[str, Any], entry: bytes | None, names: dict[str, str] | None, moment: datetime
) -> None:
    now = stamp(moment)
    try:
        expected = reference(data, entry, names, now)
    except MalformedInput:
        with pytest.raises(MalformedInput):
            ISSUER.issue(data, REQUEST, entry, names, now, JCS_SUITE)
        return
    issued, text = ISSUER.issue_json(data, REQUEST, entry, names, now, JCS_SUITE)
    assert issued == expected
    assert verify_proof(issued).verified
    if text is not None:  # the answer's spliced JSON: the same value, read back by Python
        assert json.loads(text) == issued
        assert text.endswith(b',"proof":' + canonicalize(issued["proof"]) + b"}")  # byte for byte


def test_a_lease_answer_and_its_refusal_sign_as_the_reference() -> None:
    """Two real shapes, across a change of second and of millisecond (the cached `created`)."""
    granted = {
        "status": "pass",
        "op": "acquire",
        "outcome": "GRANTED",
        "resource": "db",
        "granted": True,
        "holder": "w1",
        "fencingToken": 7,
        "expiresAt": "2026-12-01T03:00:30.000Z",
        "leaseId": "l-1",
        "ownerToken": "secret",
        "capacity": 1,
        "witnesses": [],
        "ledger": {"treeSize": 8, "rootHash": "abc=", "logIndex": 7, "leafHash": "def="},
    }
    refused = {"status": "fail", "error": {"code": "invalid_value", "field": "ttlSeconds"}}
    for now in ("2026-12-01T03:00:00.000Z", "2026-12-01T03:00:00.001Z", "2026-12-01T03:00:01.001Z"):
        names = {"resource": "p-r", "holder": "p-h"}
        issued, text = ISSUER.issue_json(granted, REQUEST, b"{}", names, now, JCS_SUITE)
        assert issued == reference(granted, b"{}", names, now)
        assert text is not None and json.loads(text) == issued  # an answer's credential text
        assert text.endswith(b',"proof":' + canonicalize(issued["proof"]) + b"}")
        refused["ledger"] = {"treeSize": 8, "rootHash": "abc="}
        assert ISSUER.issue(refused, REQUEST, None, None, now, JCS_SUITE) == reference(
            refused, None, None, now
        )


def test_a_bad_created_is_refused_as_before() -> None:
    with pytest.raises(MalformedInput):
        ISSUER.issue({"status": "pass"}, REQUEST, None, None, "yesterday", JCS_SUITE)


def test_rdfc_still_takes_the_reference_path() -> None:
    issued = ISSUER.issue(
        {"status": "pass"}, REQUEST, None, None, stamp(datetime(2026, 1, 1)), RDFC_SUITE
    )
    assert issued["proof"]["cryptosuite"] == RDFC_SUITE and verify_proof(issued).verified


# The lease route hands canonical_request the document its duplicate-key check already read:
# the canonical request must be the one it makes by parsing the body itself.
bodies = st.recursive(
    scalars | st.just(float("nan")) | st.just(2**70),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
).map(lambda value: json.dumps(value).encode()) | st.sampled_from(
    [
        b'{"resource":"r","ownerToken":"own_x","result":{"password":"p","n":[1e400]}}',
        b'{"a":"\\ud800"}',
        b'{"namespace":"ns_x","fingerprint":"f","owner_token":"t"}',
        b"not json",
        b"[1, 2]",
        b'"text"',
        b"",
    ]
)


@settings(max_examples=300, deadline=None)
@given(bodies)
def test_a_document_read_once_makes_the_same_canonical_request(body: bytes) -> None:
    document = refuse_duplicate_keys(body)
    expected = canonical_request("POST", "/api/v1/lease/acquire", body)
    assert canonical_request("POST", "/api/v1/lease/acquire", body, document) == expected


@given(st.binary(max_size=2000))
def test_the_manifest_digest_is_base64_of_sha256(data: bytes) -> None:
    """``digest`` skips base64.b64encode's wrapper; the text must be the same."""
    assert digest(data) == base64.b64encode(hashlib.sha256(data).digest()).decode()
