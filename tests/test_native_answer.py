"""The native answer path (``native/`` built as ``ledger._native``) writes the bytes the
Python path writes, or declines.

``Issuer.native_answer`` returns an answer's whole JSON from C, or None where the reference writer
(``Issuer(signer, native=False).encode_answer``) must write it. Ed25519 is deterministic, so
equal bytes mean an equal credential, signature included: for any answer, plain or not, the
native bytes must equal the Python path's, and for a plain answer native code must not decline.
The strategies are ``tests/test_receipt_template.py``'s (floats, integers past 2**53, non-BMP
keys and lone surrogates among them). The extension is built by every install that has a C
compiler (pyproject.toml); the test command's install has one, so it is imported, not skipped.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import _native
from ledger.keys.signer import Signer
from ledger.lease.ops import Op
from ledger.lease.provenance import (
    _SUBJECT_PARTS,
    CLAIM_GENERATOR,
    Issuer,
    _credential_frame,
    canonical_request,
)
from tests.test_receipt_template import answers, moments, pseudonyms, stamp, values
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE
from verify.errors import VerificationError
from verify.jcs import canonicalize, is_plain
from verify.multikey import multibase_encode
from verify.receipt import (
    CONTEXTS,
    LABEL_DATA,
    LABEL_REQUEST,
    SECRET_DATA_FIELDS,
    check_receipt,
)

SIGNER = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
REQUEST = canonical_request("POST", "/api/v1/lease/acquire", b'{"resource":"r","holder":"h"}')


def python_envelope(
    issuer: Issuer, data: dict[str, Any], entry: bytes | None, names: Any, now: str
) -> bytes:
    """What the reference writer writes: ``issuer``'s key, the accelerator off."""
    reference = Issuer(issuer.signer, native=False)
    return reference.encode_answer(data, REQUEST, entry, names, now, JCS_SUITE)


def plain_answer(data: dict[str, Any], names: Any) -> bool:
    """Every part plain JSON and the pseudonyms ASCII names of strings: native code answers."""
    if names and not all(
        type(k) is str and k.isascii() and type(v) is str for k, v in names.items()
    ):
        return False
    return is_plain(data)


@settings(max_examples=400, deadline=None)
@given(answers, st.none() | st.binary(max_size=40), pseudonyms, moments)
def test_native_envelopes_equal_the_python_path_byte_for_byte(
    data: dict[str, Any], entry: bytes | None, names: dict[str, str] | None, moment: datetime
) -> None:
    issuer, now = Issuer(SIGNER), stamp(moment)
    try:
        expected = python_envelope(issuer, data, entry, names, now)
    except VerificationError:  # the Python path refuses it (a lone surrogate): so must native
        assert issuer.native_answer(data, REQUEST, entry, names, now, JCS_SUITE) is None
        return
    made = issuer.native_answer(data, REQUEST, entry, names, now, JCS_SUITE)
    if plain_answer(data, names):
        assert made == expected
    else:
        assert made is None or made == expected
    assert issuer.encode_answer(data, REQUEST, entry, names, now, JCS_SUITE) == expected


def test_the_reference_writer_writes_the_credential_it_issues() -> None:
    """With the accelerator off, the answer is ``data`` and ``Issuer.issue``'s credential."""
    data = {"op": "get", "status": "pass", "ledger": {"treeSize": 1, "rootHash": "r"}}
    now, reference = "2026-12-02T10:00:00.123Z", Issuer(SIGNER, native=False)
    assert reference.native_answer(data, REQUEST, None, None, now, JCS_SUITE) is None
    answer = json.loads(reference.encode_answer(data, REQUEST, None, None, now, JCS_SUITE))
    assert answer == {
        "data": data,
        "_provenance": reference.issue(data, REQUEST, None, None, now, JCS_SUITE),
    }


ENTRY = b'{"v":1}'
LEAF = base64.b64encode(hashlib.sha256(b"\x00" + ENTRY).digest()).decode()  # RFC 9162 §2.1.1


def test_a_typical_grant_is_written_natively_and_verifies() -> None:
    data = {
        "op": "acquire",
        "outcome": "granted",
        "status": "pass",
        "resource": 'job-\u00e9\n"7"',
        "holder": "worker-1",
        "fencingToken": 12,
        "expiresAt": "2026-12-02T10:00:30.000Z",
        "leaseId": "17",
        "ownerToken": "tok_secret",
        "ledger": {"logIndex": 5, "treeSize": 6, "leafHash": LEAF, "rootHash": "y"},
    }
    names = {"resource": "p1", "holder": "p2"}
    issuer, now = Issuer(SIGNER), "2026-12-02T10:00:00.123Z"
    made = issuer.native_answer(data, REQUEST, ENTRY, names, now, JCS_SUITE)
    assert made is not None
    assert made == python_envelope(issuer, data, ENTRY, names, now)
    answer = json.loads(made)
    assert answer["data"] == data and list(answer) == ["data", "_provenance"]
    check_receipt(answer, [SIGNER.did], REQUEST, ENTRY)  # raises on any failed check


def test_native_code_declines_the_rdfc_suite() -> None:
    data = {"status": "pass", "ledger": {"treeSize": 1, "rootHash": "r"}}
    now = "2026-12-02T10:00:00.123Z"
    assert Issuer(SIGNER).native_answer(data, REQUEST, None, None, now, RDFC_SUITE) is None


def test_a_new_signing_key_signs_the_next_native_answer() -> None:
    issuer, now = Issuer(SIGNER), "2026-12-02T10:00:00.123Z"
    data = {"status": "pass", "ledger": {"treeSize": 1, "rootHash": "r"}}
    before = issuer.native_answer(data, REQUEST, None, None, now, JCS_SUITE)
    issuer.signer = Signer(Ed25519PrivateKey.from_private_bytes(bytes(32)))
    after = issuer.native_answer(data, REQUEST, None, None, now, JCS_SUITE)
    assert after is not None and after != before
    assert after == python_envelope(issuer, data, None, None, now)
    assert json.loads(after)["_provenance"]["issuer"] == issuer.signer.did


@pytest.mark.parametrize(
    "signature",
    [
        bytes(64),
        b"\x00\x00\x01" + bytes(61),
        b"\x00" + b"\xff" * 63,
        b"\xff" * 64,
        bytes(range(64)),
    ],
)
def test_proof_values_are_base58btc_as_the_verifier_reads_them(signature: bytes) -> None:
    """Leading zero bytes are leading '1's; every signature's characters are b58encode's."""
    answerer = _native.Answerer(
        frame=_credential_frame(SIGNER.did),
        proof=SIGNER.jcs_template(CONTEXTS),
        sha256=hashlib.sha256,
        sign=lambda message: signature,
        secrets=SECRET_DATA_FIELDS,
        parts=_SUBJECT_PARTS,
        labels=(LABEL_REQUEST, LABEL_DATA),
        generator=CLAIM_GENERATOR,
    )
    stamp_bytes = b'"2026-12-02T10:00:00.123Z"'
    made = answerer.envelope({"status": "pass"}, None, REQUEST, "l", b"", stamp_bytes)
    assert made is not None
    assert json.loads(made)["_provenance"]["proof"]["proofValue"] == multibase_encode(signature)


@settings(max_examples=500, deadline=None)
@given(values)
def test_encode_sorted_is_rfc8785_or_declines(value: Any) -> None:
    try:
        expected = canonicalize(value)
    except VerificationError:
        assert _native.encode_sorted(value) is None
        return
    made = _native.encode_sorted(value)
    if is_plain(value):  # (a lone surrogate was refused above)
        assert made == expected
    else:
        assert made in (None, expected)


@pytest.mark.parametrize(
    "value",
    [1.5, 2**53, -(2**53), (1, 2), {"\U0001f600": 1}, {1: 2}, "\ud800", bool, Op.ACQUIRE],
)
def test_values_that_are_not_plain_json_are_declined(value: Any) -> None:
    """A float, an unsafe integer, a tuple, a non-BMP or non-string key, a lone surrogate, a
    type, a str subclass: the Python path decides what each becomes."""
    assert _native.encode_sorted(value) is None


def test_plain_values_are_written_in_rfc8785_order() -> None:
    value = {"b": [True, None, 2**53 - 1], "a": '\x1f\u00e9"\\', "\u00e9": {}, "B": -(2**53 - 1)}
    assert _native.encode_sorted(value) == canonicalize(value)
    assert _native.encode_sorted(value) == (
        b'{"B":-9007199254740991,"a":"\\u001f\xc3\xa9\\"\\\\",'
        b'"b":[true,null,9007199254740991],"\xc3\xa9":{}}'
    )


def test_deep_nesting_is_left_to_the_python_path() -> None:
    deep: Any = []
    for _ in range(100):
        deep = [deep]
    assert _native.encode_sorted(deep) is None
    assert canonicalize(deep) == b"[" * 101 + b"]" * 101
