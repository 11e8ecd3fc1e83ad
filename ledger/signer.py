"""Data Integrity proof creation (vc-di-eddsa v1.0 §3.2.1 / §3.3.1 Create Proof).

Generation and verification are separate modules (STYLE 3): this one signs, with the
same hashing code the verifier uses (``verify.dataintegrity.hash_data``), so the two
cannot drift apart. Time is an argument: the caller passes ``created``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verify.dataintegrity import JCS_SUITE, RDFC_SUITE, SUITES, hash_data, proof_config
from verify.multikey import did_key, multibase_encode, public_key_multibase, verification_method_id


class Signer:
    """Adds an eddsa-jcs-2022 or eddsa-rdfc-2022 DataIntegrityProof with one Ed25519 key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        public_key = private_key.public_key()
        self.public_key_multibase: str = public_key_multibase(public_key)
        self.did: str = did_key(public_key)
        self.verification_method: str = verification_method_id(self.did)

    def sign(
        self,
        unsecured: Mapping[str, Any],
        cryptosuite: str = JCS_SUITE,
        created: str | None = None,
        extra_contexts: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A new dict: ``unsecured`` with ``proof`` added (a shallow copy; values are shared).

        ``created`` (an XML Schema dateTimeStamp) is omitted from the proof when None.
        """
        if cryptosuite not in SUITES:
            raise ValueError(f"unknown cryptosuite {cryptosuite!r}; expected one of {SUITES}")
        if "proof" in unsecured:
            raise ValueError("the document already has a proof; proof sets are not supported")
        config = proof_config(unsecured, cryptosuite, self.verification_method, created)
        signature = self._private_key.sign(
            hash_data(unsecured, config, cryptosuite, extra_contexts)
        )
        proof = dict(config)
        if cryptosuite == RDFC_SUITE:
            del proof["@context"]  # §3.2.1: an rdfc proof is the options, without @context
        proof["proofValue"] = multibase_encode(signature)
        return {**unsecured, "proof": proof}
