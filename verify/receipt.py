"""Verifying a receipt: a saved response ``{"data", "_provenance"}`` or a bare credential.

Checks, each reported with its outcome (STYLE 8) — ``verify_receipt`` returns them all,
``check_receipt`` raises on the first failure:

- ``format``: a response or a credential of the receipt format (docs/decisions/0002);
- ``proof``: the Data Integrity proof (eddsa-jcs-2022 or eddsa-rdfc-2022) verifies;
- ``issuer``: the proof's key is the issuer's did:key, and that key is trusted;
- ``manifest``: only declared assertions, each required one present, and every hash that can be
  recomputed from what was given (data, request, ledger entry) matches;
- ``subject``: what the credential states agrees with ``data``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from verify.dataintegrity import verify_proof
from verify.errors import VerificationError
from verify.ijson import require_integers
from verify.jcs import canonicalize
from verify.receipt_shape import check_credential_shape
from verify.rfc9162 import leaf_hash
from verify.trust import issued_outside

VC_CONTEXT = "https://www.w3.org/ns/credentials/v2"
TENURE_CONTEXT = "https://w3id.org/tenure/v1"
CONTEXTS = [VC_CONTEXT, TENURE_CONTEXT]
LABEL_REQUEST = "tenure.request"
LABEL_DATA = "tenure.data"
LABEL_ENTRY = "tenure.ledger.entry"
LABEL_STATE = "tenure.ledger.state"
LABELS = frozenset({LABEL_REQUEST, LABEL_DATA, LABEL_ENTRY, LABEL_STATE})
SUBJECT_FIELDS = (
    "op",
    "outcome",
    "status",
    "granted",
    "resource",
    "holder",
    "fencingToken",
    "expiresAt",
    "absoluteExpiresAt",
    "leaseId",
    "capacity",
    "scope",
    "replayed",
    "entropyBits",
)
INTEGER_FIELDS = ("fencingToken", "leaseId", "capacity", "entropyBits", "retryAfterSeconds")
ENTRY_INTEGERS = ("index", "v", "fencingToken", "leaseId", "capacity")
LEDGER_INTEGERS = ("logIndex", "treeSize")
SECRET_DATA_FIELDS = frozenset({"ownerToken", "namespace"})
SECRET_REQUEST_FIELDS = frozenset({"ownerToken", "owner_token", "namespace", "fingerprint"})


def canonical_data(data: Mapping[str, Any]) -> bytes:
    """``data`` as the manifest hashes it: the secrets it hands the caller removed."""
    return canonicalize({k: v for k, v in data.items() if k not in SECRET_DATA_FIELDS})


def ledger_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    ledger = data.get("ledger")
    return ledger if isinstance(ledger, Mapping) else {}


def state_bytes(data: Mapping[str, Any]) -> bytes:
    """What the ledger assertion hashes when the answer appended no entry."""
    ledger = ledger_of(data)
    return canonicalize({"treeSize": ledger.get("treeSize"), "rootHash": ledger.get("rootHash")})


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


class ReceiptError(VerificationError):
    """A receipt check failed; ``check`` names it."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(f"{check}: {message}")
        self.check = check


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str

    def as_data(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(slots=True)
class Report:
    checks: list[Check] = field(default_factory=list)
    signed: list[str] = field(default_factory=list)
    """The parts of the document the signature covers (directly or through a manifest hash)."""
    unsigned: list[str] = field(default_factory=list)
    """The parts it does not: nothing vouches for them, whatever they say."""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, ok, detail))
        return ok

    def as_data(self) -> dict[str, Any]:
        checks = [check.as_data() for check in self.checks]
        data: dict[str, Any] = {"status": "pass" if self.ok else "fail", "checks": checks}
        if self.signed or self.unsigned:
            data["coverage"] = {"signed": self.signed, "unsigned": self.unsigned}
        return data


def split_receipt(document: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(data, credential) of a saved response, or (None, credential) of a bare one."""
    if not isinstance(document, dict):
        raise ReceiptError("format", "a receipt is a JSON object")
    if "_provenance" in document:
        data, credential = document.get("data"), document["_provenance"]
        if not isinstance(data, dict) or not isinstance(credential, dict):
            raise ReceiptError("format", "data and _provenance must be objects")
        return data, credential
    if "proof" in document and "credentialSubject" in document:
        return None, document
    raise ReceiptError("format", "neither a response with _provenance nor a credential")


def verify_receipt(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
) -> Report:
    """Every check of a receipt. ``trusted`` are the did:keys to accept (None: trust none); a
    ``{did: verify.trust.Period}`` mapping also bounds when each key may have issued it.

    The credential's shape is checked first (``verify.receipt_shape``): one tenure never issues
    fails ``format`` and is neither canonicalized nor hashed, so no input costs real time.
    """
    report = Report()
    try:
        data, credential = split_receipt(document)
        check_credential_shape(credential, SUBJECT_FIELDS, LABELS)
        _integers(data, "data")
        _integers(credential.get("credentialSubject"), "credentialSubject")
    except VerificationError as error:
        report.add("format", False, str(error))
        return report
    report.add("format", True, "response with _provenance" if data else "bare credential")
    _coverage(report, document, data)
    _check_proof(report, credential, trusted)
    subject = credential.get("credentialSubject")
    if not isinstance(subject, dict):
        report.add("subject", False, "credentialSubject must be an object")
        return report
    _check_manifest(report, subject.get("manifest"), data, request, entry)
    if data is not None:
        _check_subject(report, subject, data)
    return report


def _integers(section: Any, where: str) -> None:
    """The fields tenure writes as integers are integers, not ``1.0`` (verify.ijson)."""
    if not isinstance(section, Mapping):
        return
    require_integers(section, INTEGER_FIELDS, where)
    require_integers(ledger_of(section), LEDGER_INTEGERS, f"{where}.ledger")
    entry = section.get("entry")  # a bundle's answer states its entry
    if isinstance(entry, Mapping):
        require_integers(entry, ENTRY_INTEGERS, f"{where}.entry")


def check_receipt(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
) -> None:
    """The raising variant: ReceiptError naming the first failed check."""
    for check in verify_receipt(document, trusted, request, entry).checks:
        if not check.ok:
            raise ReceiptError(check.name, check.detail)


def _check_proof(
    report: Report, credential: dict[str, Any], trusted: Collection[str] | None
) -> None:
    if credential.get("@context") != CONTEXTS:
        report.add("format", False, f"@context must be {CONTEXTS}")
    result = verify_proof(credential)
    suite = result.cryptosuite or "?"
    report.add("proof", result.verified, result.error or f"{suite} signature verifies")
    issuer = credential.get("issuer")
    method = result.verification_method or ""
    if method.split("#")[0] != issuer:
        report.add("issuer", False, "the proof's key is not the issuer's did:key")
    elif trusted is None:
        report.add("issuer", False, f"{issuer} is not trusted: no trusted key was given")
    elif issuer not in trusted:
        report.add("issuer", False, f"{issuer} is not trusted")
    elif (outside := issued_outside(trusted, issuer, credential.get("validFrom"))) is not None:
        report.add("issuer", False, f"{issuer} is trusted, but the receipt was {outside}")
    else:
        report.add("issuer", True, f"{issuer} is trusted")


def _coverage(report: Report, document: dict[str, Any], data: dict[str, Any] | None) -> None:
    """Name what the signature covers and what it does not."""
    if data is None:
        report.signed.append("the whole credential but proof.proofValue")
        return
    report.signed += ["_provenance (but proof.proofValue)", "data (through tenure.data)"]
    report.unsigned += sorted(name for name in document if name not in ("data", "_provenance"))
    report.unsigned += sorted(f"data.{name}" for name in SECRET_DATA_FIELDS if name in data)


def _check_manifest(
    report: Report,
    manifest: Any,
    data: dict[str, Any] | None,
    request: bytes | None,
    entry: bytes | None,
) -> None:
    hashes = _assertions(report, manifest)
    if hashes is None:
        return
    if data is not None:
        try:
            _compare(report, LABEL_DATA, hashes, canonical_data(data))
            if LABEL_STATE in hashes:
                _compare(report, LABEL_STATE, hashes, state_bytes(data))
        except VerificationError as error:  # e.g. an integer beyond I-JSON's range
            report.add(f"manifest:{LABEL_DATA}", False, f"data cannot be canonicalized: {error}")
    if request is not None:
        _compare(report, LABEL_REQUEST, hashes, request)
    if entry is not None:
        _compare(report, LABEL_ENTRY, hashes, entry)
        if data is not None:
            _check_leaf(report, data, entry)


def _check_leaf(report: Report, data: dict[str, Any], entry: bytes) -> None:
    """The entry is the one the answer's ledger position names (RFC 9162 leaf hash)."""
    declared = ledger_of(data).get("leafHash")
    computed = base64.b64encode(leaf_hash(entry)).decode()
    ok = declared == computed
    detail = "entry hashes to data.ledger.leafHash" if ok else f"leaf {computed} != {declared}"
    report.add("ledger", ok, detail)


def _assertions(report: Report, manifest: Any) -> dict[str, str] | None:
    if not isinstance(manifest, dict) or manifest.get("alg") != "sha256":
        report.add("manifest", False, "manifest missing or its alg is not sha256")
        return None
    items = manifest.get("assertions")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        report.add("manifest", False, "assertions must be a list of objects")
        return None
    hashes = {str(item.get("label")): str(item.get("hash")) for item in items}
    undeclared = sorted(set(hashes) - LABELS)
    ledger = {LABEL_ENTRY, LABEL_STATE} & set(hashes)
    missing = sorted({LABEL_REQUEST, LABEL_DATA} - set(hashes))
    if undeclared or missing or len(ledger) != 1 or len(hashes) != len(items):
        problem = f"undeclared {undeclared}, missing {missing}, ledger assertions {sorted(ledger)}"
        report.add("manifest", False, problem)
        return None
    report.add("manifest", True, f"declares {', '.join(sorted(hashes))}")
    return hashes


def _compare(report: Report, label: str, hashes: dict[str, str], content: bytes) -> None:
    if label not in hashes:
        report.add(f"manifest:{label}", False, "assertion missing")
        return
    computed = sha256_b64(content)
    ok = computed == hashes[label]
    detail = "hash matches" if ok else f"declared {hashes[label]}, computed {computed}"
    report.add(f"manifest:{label}", ok, detail)


def _check_subject(report: Report, subject: dict[str, Any], data: dict[str, Any]) -> None:
    stated = [name for name in (*SUBJECT_FIELDS, "ledger", "error") if name in subject]
    differ = [name for name in stated if subject[name] != data.get(name)]
    absent = [name for name in (*SUBJECT_FIELDS, "ledger") if name in data and name not in subject]
    ok = not differ and not absent
    detail = "states what data says" if ok else f"differs on {differ}, omits {absent}"
    report.add("subject", ok, detail)
