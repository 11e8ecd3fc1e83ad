"""The W3C vc-di-eddsa v1.0 test vectors, every intermediate value, for both suites.

tests/vectors/vc-di-eddsa/ is a copy of the spec's TestVectors folder (see SOURCE_COMMIT).
Ed25519 is deterministic, so signing the unsigned credential with the vector key and
date must reproduce the published proofValue exactly.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.keys.signer import Signer
from verify.dataintegrity import canonical_bytes, check_proof, hash_data, verify_proof
from verify.multikey import b58encode, multibase_decode, public_key_multibase

VECTORS = Path(__file__).parent / "vectors" / "vc-di-eddsa"
ED25519_PRIV_MULTICODEC = b"\x80\x26"  # unsigned varint of 0x1300, ed25519-priv
CREATED = "2023-02-24T23:36:38Z"

# suite -> (folder, file-name suffix)
SUITES = {
    "eddsa-jcs-2022": ("eddsa-jcs-2022", "JCS"),
    "eddsa-rdfc-2022": ("eddsa-rdfc-2022", "DataInt"),
}


def _text(suite: str, stem: str) -> str:
    folder, suffix = SUITES[suite]
    return (VECTORS / folder / f"{stem}{suffix}.txt").read_text(encoding="utf-8").strip("\n")


def _json(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def _suite_json(suite: str, stem: str) -> Any:
    folder, suffix = SUITES[suite]
    return _json(f"{folder}/{stem}{suffix}.json")


def _private_key() -> Ed25519PrivateKey:
    decoded = multibase_decode(_json("keyPair.json")["privateKeyMultibase"])
    assert decoded[:2] == ED25519_PRIV_MULTICODEC
    return Ed25519PrivateKey.from_private_bytes(decoded[2:])


def _canonical(suite: str, document: Any) -> str:
    # N-Quads files end with a newline the text reader above strips; compare like for like.
    return canonical_bytes(document, suite).decode("utf-8").strip("\n")


def test_key_pair_matches() -> None:
    public = _private_key().public_key()
    assert public_key_multibase(public) == _json("keyPair.json")["publicKeyMultibase"]


@pytest.mark.parametrize("suite", SUITES)
def test_intermediate_values(suite: str) -> None:
    unsigned = _json("unsigned.json")
    config = _suite_json(suite, "proofConfig")

    assert _canonical(suite, unsigned) == _text(suite, "canonDoc")
    doc_hash = hashlib.sha256(canonical_bytes(unsigned, suite)).hexdigest()
    assert doc_hash == _text(suite, "docHash")
    assert _canonical(suite, config) == _text(suite, "proofCanon")
    proof_hash = hashlib.sha256(canonical_bytes(config, suite)).hexdigest()
    assert proof_hash == _text(suite, "proofHash")

    combined = hash_data(unsigned, config, suite)
    assert combined.hex() == _text(suite, "combinedHash") == proof_hash + doc_hash
    signature = _private_key().sign(combined)
    assert signature.hex() == _text(suite, "sigHex")
    assert "z" + b58encode(signature) == _text(suite, "sigBTC58")


@pytest.mark.parametrize("suite", SUITES)
def test_signed_credential_verifies(suite: str) -> None:
    signed = _suite_json(suite, "signed")
    check_proof(signed)
    result = verify_proof(signed)
    assert result.verified, result.error
    assert result.cryptosuite == suite
    assert result.verification_method == signed["proof"]["verificationMethod"]


@pytest.mark.parametrize("suite", SUITES)
def test_signer_reproduces_signed_credential(suite: str) -> None:
    signed = Signer(_private_key()).sign(_json("unsigned.json"), suite, created=CREATED)
    expected = _suite_json(suite, "signed")
    assert signed == expected
    assert signed["proof"]["proofValue"] == _text(suite, "sigBTC58")
