"""W3C vc-di-eddsa v1.0 (Recommendation): eddsa-jcs-2022 and eddsa-rdfc-2022 proofs.

https://www.w3.org/TR/vc-di-eddsa/ — §3.2 eddsa-rdfc-2022, §3.3 eddsa-jcs-2022. For both suites:

- transformation (§3.2.3 / §3.3.3): RDFC-1.0 N-Quads, or RFC 8785 JCS;
- proof configuration (§3.2.5 / §3.3.5): the proof without ``proofValue``, with the document's
  ``@context`` (rdfc sets it for hashing, §3.2.5 step 2; jcs copies it into the proof itself,
  §3.3.1 step 2, so only a jcs proof carries it); canonicalized like the document;
- hashing (§3.2.4 / §3.3.4): SHA-256(canonical proof config) ‖ SHA-256(canonical document);
- signature (§3.2.6 / §3.3.6): Ed25519 over those 64 bytes; ``proofValue`` is multibase
  base58btc (``z…``) of the signature. Proofs are made in ``ledger/keys/signer.py``, not here."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verify import jcs
from verify.errors import MalformedInput, SignatureError, VerificationError
from verify.limits import check_bounds
from verify.multikey import multibase_decode, resolve_did_key

JCS_SUITE = "eddsa-jcs-2022"
RDFC_SUITE = "eddsa-rdfc-2022"
SUITES = (JCS_SUITE, RDFC_SUITE)
PROOF_TYPE = "DataIntegrityProof"
PROOF_PURPOSE = "assertionMethod"  # the only purpose tenure issues or accepts
SIGNATURE_SIZE = 64
_MAX_PROOF_VALUE = 100  # 'z' + base58 of 64 bytes is at most 89 characters

# XML Schema 1.1 dateTimeStamp (the VC Data Integrity §2.1 type of `created`): a
# date, a time and a mandatory time zone. Ranges are checked by datetime below.
_DATETIME_STAMP = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-](\d\d):(\d\d))$", re.ASCII
)

KeyResolver = Callable[[str], Ed25519PublicKey]
Contexts = Mapping[str, Any] | None


@dataclass(frozen=True)
class ProofResult:
    """The outcome of :func:`verify_proof`; ``error`` says which check failed and why."""

    verified: bool
    cryptosuite: str | None
    verification_method: str | None
    error: str | None = None


def proof_config(
    unsecured: Mapping[str, Any],
    cryptosuite: str,
    verification_method: str,
    created: str | None,
    proof_purpose: str = PROOF_PURPOSE,
) -> dict[str, Any]:
    """The proof configuration to hash (§3.2.5 / §3.3.5): the proof minus ``proofValue``.

    It carries the document's ``@context`` for both suites; for jcs that ``@context`` is
    also part of the proof itself (§3.3.1 step 2), for rdfc it is dropped from the proof.
    ``created`` may be None: it is optional in Data Integrity.
    """
    config: dict[str, Any] = {"type": PROOF_TYPE, "cryptosuite": cryptosuite}
    if created is not None:
        config["created"] = created
    config["verificationMethod"] = verification_method
    config["proofPurpose"] = proof_purpose
    if "@context" in unsecured:
        context = unsecured["@context"]
        # A copy, so the signed document and its proof never share one mutable list.
        config["@context"] = list(context) if isinstance(context, list) else context
    return config


def hash_data(
    unsecured: Mapping[str, Any],
    proof_config: Mapping[str, Any],
    cryptosuite: str,
    extra_contexts: Contexts = None,
) -> bytes:
    """The 64 bytes signed: SHA-256(proof config) ‖ SHA-256(document) (§3.2.4 / §3.3.4)."""
    _check_config(proof_config, cryptosuite)
    config_hash = hashlib.sha256(canonical_bytes(proof_config, cryptosuite, extra_contexts))
    document_hash = hashlib.sha256(canonical_bytes(unsecured, cryptosuite, extra_contexts))
    return config_hash.digest() + document_hash.digest()


def canonical_bytes(
    document: Mapping[str, Any], cryptosuite: str, extra_contexts: Contexts = None
) -> bytes:
    """The suite's transformation (§3.2.3 / §3.3.3) of a document or proof configuration."""
    if cryptosuite == JCS_SUITE:
        return jcs.canonicalize(document)
    if cryptosuite == RDFC_SUITE:
        # Imported here: pyld (with aiohttp, ssl, lxml) costs ~55 ms to import, and a jcs-only
        # verification never needs it.
        from verify.jsonld import canonicalize_rdfc

        return canonicalize_rdfc(document, extra_contexts).encode("utf-8")
    raise MalformedInput(f"unknown cryptosuite {cryptosuite!r}; expected one of {SUITES}")


def verify_proof(
    secured: Mapping[str, Any],
    resolve_key: KeyResolver = resolve_did_key,
    extra_contexts: Contexts = None,
) -> ProofResult:
    """Verify a secured document's proof; never raises for a bad proof or document."""
    proof = secured.get("proof") if isinstance(secured, Mapping) else None
    suite = _str_field(proof, "cryptosuite")
    method = _str_field(proof, "verificationMethod")
    try:
        check_proof(secured, resolve_key, extra_contexts)
    except VerificationError as e:
        return ProofResult(False, suite, method, f"{type(e).__name__}: {e}")
    return ProofResult(True, suite, method)


def check_proof(
    secured: Mapping[str, Any],
    resolve_key: KeyResolver = resolve_did_key,
    extra_contexts: Contexts = None,
) -> None:
    """Verify a secured document's proof, raising SignatureError or MalformedInput.

    ``resolve_key`` maps the proof's verificationMethod to its key and raises a
    VerificationError (UntrustedKey, MalformedInput) when it cannot.
    """
    check_bounds(secured, "the secured document")  # before any canonicalization
    proof = _proof_of(secured)
    signature = _validate_proof(proof)
    unsecured = {key: value for key, value in secured.items() if key != "proof"}
    options = {key: value for key, value in proof.items() if key != "proofValue"}
    suite = options["cryptosuite"]
    if suite == JCS_SUITE:
        _inject_jcs_context(unsecured, options)
    else:
        options["@context"] = unsecured.get("@context")  # §3.2.5 step 2
    data = hash_data(unsecured, options, suite, extra_contexts)
    key = resolve_key(options["verificationMethod"])
    try:
        key.verify(signature, data)
    except InvalidSignature as e:
        raise SignatureError(f"{suite} proof signature does not verify") from e


def _inject_jcs_context(unsecured: dict[str, Any], options: Mapping[str, Any]) -> None:
    """§3.3.2 step 4: the document's @context must start with the proof's; hash with the proof's."""
    if "@context" not in options:
        return
    proof_context = _as_list(options["@context"])
    document_context = _as_list(unsecured.get("@context"))
    if document_context[: len(proof_context)] != proof_context:
        raise SignatureError("document @context does not start with the proof's @context")
    unsecured["@context"] = options["@context"]


def _proof_of(secured: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(secured, Mapping):
        raise MalformedInput("a secured document must be a JSON object")
    proof = secured.get("proof")
    if isinstance(proof, list):
        raise MalformedInput("proof sets and chains are not supported: expected one proof")
    if not isinstance(proof, Mapping):
        raise MalformedInput("the document has no proof object")
    return proof


def _validate_proof(proof: Mapping[str, Any]) -> bytes:
    """Data Integrity §4.5 step 3 and §2.1 field rules; returns the signature bytes."""
    _check_config(proof, _str_field(proof, "cryptosuite"))
    if proof.get("proofPurpose") != PROOF_PURPOSE:
        raise MalformedInput(f"proofPurpose must be {PROOF_PURPOSE!r}")
    if not isinstance(proof.get("verificationMethod"), str):
        raise MalformedInput("proof verificationMethod must be a string")
    value = proof.get("proofValue")
    if not isinstance(value, str) or len(value) > _MAX_PROOF_VALUE:
        raise MalformedInput("proofValue must be a multibase base58btc string")
    signature = multibase_decode(value)
    if len(signature) != SIGNATURE_SIZE:
        raise MalformedInput(f"proofValue must hold 64 signature bytes, got {len(signature)}")
    return signature


def _check_config(config: Mapping[str, Any], cryptosuite: str | None) -> None:
    """§3.2.5 / §3.3.5 steps 2-3: type, cryptosuite and a well-formed ``created``."""
    if config.get("type") != PROOF_TYPE:
        raise MalformedInput(f"proof type must be {PROOF_TYPE!r}")
    if cryptosuite not in SUITES or config.get("cryptosuite") != cryptosuite:
        raise MalformedInput(f"proof cryptosuite must be one of {SUITES}")
    if "created" in config:
        check_datetime_stamp(config["created"])


def check_datetime_stamp(value: Any) -> None:
    """Raise MalformedInput unless ``value`` is an XML Schema dateTimeStamp string."""
    match = _DATETIME_STAMP.match(value) if isinstance(value, str) else None
    try:
        if match is None:
            raise ValueError(value)
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        datetime(year, month, day, hour, minute, second)
        if match[9] is not None and (int(match[9]) > 14 or int(match[10]) > 59):
            raise ValueError(value)
    except ValueError as e:
        raise MalformedInput(f"proof created {value!r} is not an XML Schema dateTimeStamp") from e


def _as_list(context: Any) -> list[Any]:
    return context if isinstance(context, list) else [context]


def _str_field(proof: Any, name: str) -> str | None:
    value = proof.get(name) if isinstance(proof, Mapping) else None
    return value if isinstance(value, str) else None
