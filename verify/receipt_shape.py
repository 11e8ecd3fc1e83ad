"""The exact shape of the credential tenure issues (docs/decisions/0002), checked before any
canonicalization or signature work.

RDF canonicalization can take time that grows far faster than the input: a credential with a few
hundred extra manifest assertions took minutes. Tenure never issues such a credential, so a
verifier refuses it up front, naming what is wrong: a field tenure never writes, a manifest that
is not exactly one ``{label, hash}`` per expected label, a value nested or sized beyond what
tenure writes, an integer outside I-JSON's range. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from verify.errors import MalformedInput
from verify.limits import check_bounds, check_int

__all__ = ["check_credential_shape"]

CREDENTIAL_FIELDS = frozenset(
    {"@context", "type", "issuer", "validFrom", "credentialSubject", "proof"}
)
PROOF_FIELDS = frozenset(
    {"@context", "type", "cryptosuite", "created", "verificationMethod", "proofPurpose"}
    | {"proofValue"}
)
MANIFEST_FIELDS = frozenset({"claimGenerator", "alg", "assertions"})
OBJECT_FIELDS = ("ledger", "error", "pseudonyms")
MAX_STRING = 4096
MAX_OBJECT_FIELDS = 32
_HASH = re.compile(r"[A-Za-z0-9+/]{43}=")


def check_credential_shape(
    credential: Mapping[str, Any], scalar_fields: tuple[str, ...], labels: frozenset[str]
) -> None:
    """Raise MalformedInput unless ``credential`` has the shape tenure issues.

    ``scalar_fields`` are the subject fields copied from ``data``; ``labels`` the manifest labels
    of which ``tenure.request``, ``tenure.data`` and exactly one ledger label appear, each once.
    """
    check_bounds(credential, "the credential", max_depth=8, max_nodes=400)
    _only(credential, CREDENTIAL_FIELDS, "credential")
    proof = credential.get("proof")
    if isinstance(proof, Mapping):
        _only(proof, PROOF_FIELDS, "proof")
    subject = credential.get("credentialSubject")
    if not isinstance(subject, Mapping):
        raise MalformedInput("credentialSubject must be an object")
    allowed = {"type", "manifest", *scalar_fields, *OBJECT_FIELDS}
    _only(subject, allowed, "credentialSubject")
    for name in scalar_fields:
        _scalar(subject.get(name), f"credentialSubject.{name}")
    for name in OBJECT_FIELDS:
        _small_object(subject.get(name), f"credentialSubject.{name}")
    _manifest(subject.get("manifest"), labels)


def _only(section: Mapping[str, Any], allowed: frozenset[str] | set[str], where: str) -> None:
    extra = sorted(str(name) for name in section if name not in allowed)
    if extra:
        raise MalformedInput(f"{where} has fields tenure never issues: {', '.join(extra[:5])}")


def _scalar(value: Any, what: str) -> None:
    if isinstance(value, dict | list):
        raise MalformedInput(f"{what} must be a string, number, boolean or null")
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise MalformedInput(f"{what} is longer than {MAX_STRING} characters")
    check_int(value, what)


def _small_object(value: Any, what: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or len(value) > MAX_OBJECT_FIELDS:
        raise MalformedInput(f"{what} must be an object of at most {MAX_OBJECT_FIELDS} fields")
    for name, item in value.items():
        for part in item if isinstance(item, list) else [item]:
            _scalar(part, f"{what}.{name}")


def _manifest(manifest: Any, labels: frozenset[str]) -> None:
    if not isinstance(manifest, dict):
        raise MalformedInput("credentialSubject.manifest must be an object")
    _only(manifest, MANIFEST_FIELDS, "credentialSubject.manifest")
    assertions = manifest.get("assertions")
    if not isinstance(assertions, list) or len(assertions) != 3:
        raise MalformedInput("manifest.assertions must list exactly 3 {label, hash} objects")
    seen: list[str] = []
    for item in assertions:
        if not isinstance(item, dict) or set(item) != {"label", "hash"}:
            raise MalformedInput("each manifest assertion must be exactly {label, hash}")
        label, digest = item["label"], item["hash"]
        if label not in labels or label in seen:
            raise MalformedInput(f"manifest label {str(label)[:64]!r} is unknown or repeated")
        if not isinstance(digest, str) or not _HASH.fullmatch(digest):
            raise MalformedInput(f"manifest hash of {label} is not a base64 SHA-256")
        seen.append(label)
