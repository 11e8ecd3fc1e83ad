"""libsodium signs the answers and must write exactly OpenSSL's signature.

Ed25519 (RFC 8032 §5.1.6) is deterministic: for one key and one message every correct
implementation gives the same 64 bytes, so ``Signer.sign_bytes`` through PyNaCl must equal
``cryptography``'s ``Ed25519PrivateKey.sign`` for any key and message, and a credential issued
either way must be the same, ``proofValue`` included.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.keys import signer as signing
from ledger.keys.signer import Signer
from ledger.lease.provenance import Issuer, canonical_request
from verify.dataintegrity import JCS_SUITE, RDFC_SUITE, check_datetime_stamp, verify_proof
from verify.errors import MalformedInput


def test_the_server_extra_brings_pynacl() -> None:
    """Without it the comparisons below would compare OpenSSL with itself."""
    assert signing.HAVE_SODIUM
    key = Ed25519PrivateKey.generate()
    assert Signer(key)._sodium_key is not None


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(max_size=300))
def test_libsodium_signs_as_openssl_does(seed: bytes, message: bytes) -> None:
    key = Ed25519PrivateKey.from_private_bytes(seed)
    assert Signer(key).sign_bytes(message) == key.sign(message)


def test_a_credential_is_the_same_whoever_signs_it() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    sodium, openssl = Signer(key), Signer(key)
    openssl._sodium_key = None  # the path without PyNaCl
    data = {"status": "pass", "op": "get", "ledger": {"treeSize": 1, "rootHash": "x="}}
    request = canonical_request("POST", "/api/v1/lease/get", b'{"resource":"r"}')
    now = "2026-12-01T10:00:00.000Z"
    for suite in (JCS_SUITE, RDFC_SUITE):
        ours = Issuer(sodium).issue(data, request, None, None, now, suite)
        theirs = Issuer(openssl).issue(data, request, None, None, now, suite)
        assert ours == theirs and verify_proof(ours).verified


def _verdict(check: object, value: str) -> str | None:
    try:
        check(value)  # type: ignore[operator]
    except MalformedInput as error:
        return str(error)
    return None


_stamps = st.builds(
    "{}-{}-{}T{}:{}:{}.{}Z".format,
    st.integers(0, 9999).map("{:04d}".format),
    st.integers(0, 19).map("{:02d}".format),
    st.integers(0, 39).map("{:02d}".format),
    st.integers(0, 29).map("{:02d}".format),
    st.integers(0, 69).map("{:02d}".format),
    st.integers(0, 69).map("{:02d}".format),
    st.integers(0, 999).map("{:03d}".format),
)


@settings(max_examples=800, deadline=None)
@given(
    _stamps
    | st.sampled_from(
        ["2028-02-29T23:59:59.999Z", "2026-02-29T00:00:00.000Z", "2026-01-01T24:00:00.000Z"]
    )
    | st.sampled_from(
        ["2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:00Z", "२०२६-01-01T00:00:00.000Z"]
    )
)
def test_the_stamp_check_of_answers_refuses_what_the_verifiers_refuses(stamp: str) -> None:
    """The signer's quick check of ``created`` accepts exactly what the verifier's accepts, and
    refuses in the same words (out-of-range dates, leap days, other forms, non-ASCII digits)."""
    assert _verdict(signing._check_stamp, stamp) == _verdict(check_datetime_stamp, stamp)
