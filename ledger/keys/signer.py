"""Data Integrity proof creation (vc-di-eddsa v1.0 §3.2.1 / §3.3.1 Create Proof).

Generation and verification are separate modules (STYLE 3): this one signs with the verifier's
hashing code (``verify.dataintegrity.hash_data``), so the two cannot drift apart; the caller
passes ``created``. :meth:`Signer.sign_jcs_text` takes the RFC 8785 bytes the caller already
built and splices the proof configuration's from a template made once per ``@context``
(``tests/test_receipt_template.py`` proves both equal to ``hash_data``'s). Ed25519 (RFC 8032
§5.1.6) is deterministic: where PyNaCl is installed libsodium signs, the same 64 bytes as
OpenSSL's, faster (``tests/test_fast_signing.py``; figures in docs/performance.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from verify.dataintegrity import (
    JCS_SUITE,
    RDFC_SUITE,
    SUITES,
    check_datetime_stamp,
    hash_data,
    proof_config,
)
from verify.jcs import canonicalize
from verify.multikey import did_key, multibase_encode, public_key_multibase, verification_method_id

try:  # the server's extra
    from nacl.bindings import crypto_sign

    HAVE_SODIUM = True
except ImportError:  # pragma: no cover - exercised where PyNaCl is absent
    HAVE_SODIUM = False

_CREATED = "\ue000created"  # a placeholder no dateTimeStamp can be, split out of the template
_VALUE = "\ue000value"  # nor any base58 proofValue
_Template = tuple[bytes, bytes, bytes, bytes, bytes]


class Signer:
    """Adds an eddsa-jcs-2022 or eddsa-rdfc-2022 DataIntegrityProof with one Ed25519 key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        public_key = private_key.public_key()
        self._sodium_key = _sodium_key(private_key) if HAVE_SODIUM else None
        self.public_key_multibase: str = public_key_multibase(public_key)
        self.did: str = did_key(public_key)
        self.verification_method: str = verification_method_id(self.did)
        self._templates: dict[tuple[str, ...], _Template] = {}
        self._created: tuple[str, bytes] = ("", b"")

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
        signature = self.sign_bytes(hash_data(unsecured, config, cryptosuite, extra_contexts))
        proof = dict(config)
        if cryptosuite == RDFC_SUITE:
            del proof["@context"]  # §3.2.1: an rdfc proof is the options, without @context
        proof["proofValue"] = multibase_encode(signature)
        return {**unsecured, "proof": proof}

    def sign_jcs_text(
        self, unsecured: Mapping[str, Any], canonical: bytes, created: str
    ) -> tuple[dict[str, Any], bytes]:
        """``sign(unsecured, JCS_SUITE, created)``, for a caller that already holds the RFC 8785
        bytes of ``unsecured`` (``canonical``; the caller answers for them) and whose
        ``@context`` is a list of strings: the same proof, without canonicalizing either half —
        and the RFC 8785 bytes of that proof, spliced from the template made with the
        configuration's (only ``created`` and ``proofValue`` vary)."""
        if "proof" in unsecured:
            raise ValueError("the document already has a proof; proof sets are not supported")
        config = proof_config(unsecured, JCS_SUITE, self.verification_method, created)
        template = self.jcs_template(config["@context"])
        stamp = self.stamp_bytes(created)
        config_hash = hashlib.sha256(template[0] + stamp + template[1]).digest()
        document_hash = hashlib.sha256(canonical).digest()
        value = multibase_encode(self.sign_bytes(config_hash + document_hash))
        config["proofValue"] = value
        text = template[2] + stamp + template[3] + value.encode("ascii") + template[4]
        return {**unsecured, "proof": config}, text

    def jcs_template(self, context: list[str]) -> _Template:
        """What :meth:`sign_jcs_text` splices for a document whose ``@context`` is ``context``
        (made once per context): the proof configuration's RFC 8785 bytes before and after
        ``created``, then the proof's before ``created``, between it and the ``proofValue``'s
        characters, and after them."""
        key = tuple(context)
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = self._template(context)
        return template

    def sign_bytes(self, message: bytes) -> bytes:
        """The Ed25519 signature of ``message`` (libsodium's where installed; the same bytes)."""
        if self._sodium_key is None:
            return self._private_key.sign(message)
        return crypto_sign(message, self._sodium_key)[:64]  # signature ‖ message

    def stamp_bytes(self, created: str) -> bytes:
        """The RFC 8785 bytes of the dateTimeStamp ``created`` (MalformedInput if it is none),
        kept for the next call: every answer of the same millisecond has the same."""
        cached, quoted = self._created
        if created != cached:
            _check_stamp(created)  # as hash_data checks it; ASCII only, so JSON-plain
            quoted = b'"' + created.encode("ascii") + b'"'
            self._created = (created, quoted)
        return quoted

    def _template(self, context: list[str]) -> _Template:
        """The canonical bytes of the proof configuration around ``created``, then those of the
        proof around ``created`` and around its ``proofValue`` (RFC 8785 sorts the members)."""
        if not all(isinstance(item, str) for item in context):
            raise ValueError("sign_jcs_text needs an @context of strings; use sign")
        placeholder = {"@context": context}
        config = proof_config(placeholder, JCS_SUITE, self.verification_method, _CREATED)
        prefix, suffix = canonicalize(config).split(canonicalize(_CREATED))
        config["proofValue"] = _VALUE
        before, rest = canonicalize(config).split(canonicalize(_CREATED))
        between, after = rest.split(canonicalize(_VALUE))
        return prefix, suffix, before, between + b'"', b'"' + after


_MILLIS_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", re.ASCII).fullmatch
"""The form every answer's ``created`` has (``ledger.lease.entries.iso``)."""


def _check_stamp(created: str) -> None:
    """``check_datetime_stamp(created)``, a tenth of its cost for the answers' own form: the
    shape by one regex, the date and time by ``datetime.fromisoformat`` (the same ranges)."""
    if type(created) is str and _MILLIS_STAMP(created) is not None:
        try:
            datetime.fromisoformat(created[:-1])
            return
        except ValueError:
            pass  # the verifier's check says why
    check_datetime_stamp(created)


def _sodium_key(private_key: Ed25519PrivateKey) -> bytes:
    """libsodium's form of an Ed25519 secret key: the 32-byte seed, then the public key."""
    seed = private_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return seed + private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
