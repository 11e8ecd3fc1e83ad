"""Verifying an offline receipt bundle (DESIGN §6; the format is docs/bundle-format.md).

A bundle is self-contained JSON: a receipt, the exact bytes of the ledger entry it names, an
RFC 9162 inclusion proof of that entry into a signed C2SP checkpoint, the public keys needed,
and optionally a consistency proof from that checkpoint to a later signed one. Checks, each
reported with its outcome (STYLE 8), beyond those of ``verify.receipt`` (run with the bundle's
entry bytes, so the manifest's ``tenure.ledger.entry`` assertion is recomputed):

- ``bundle:format``: the versioned ``type`` and every section has its shape;
- ``keys``: each listed key is a well-formed did:key and is trusted. With no trusted key given
  this check fails (a bundle forged with the forger's own key would otherwise pass): the other
  checks still run under the bundle's own keys, which proves consistency, not origin;
- ``entry``: the entry's RFC 9162 leaf hash is the receipt's ``ledger.leafHash`` and the entry
  sits at the index the receipt and the proof name;
- ``checkpoint``: the C2SP signed note verifies under a trusted key named after its origin, and
  its tlog-checkpoint body is the origin, size and root the JSON states;
- ``witnesses`` (if a policy is given): K listed witnesses cosigned that note (verify.witnesses);
- ``inclusion``: the audit path leads from the entry to the checkpoint's root (§2.1.3.2);
- ``consistency`` (if present): the later checkpoint's note verifies and the consistency proof
  leads from the checkpoint to it (§2.1.4.2).

Pure: no I/O, no clock. ``verify_document`` is what the CLI and ``POST /verify-provenance`` call.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.bundle_format import (
    BUNDLE_TYPE,
    Bundle,
    ConsistencyProof,
    ListedKey,
    MalformedBundle,
    SignedCheckpointJSON,
    is_bundle,
    parse_bundle,
)
from verify.errors import MalformedInput, VerificationError
from verify.ijson import NotIJSON, loads
from verify.limits import check_bounds
from verify.multikey import DID_KEY_PREFIX, public_key_from_did, public_key_from_multibase
from verify.note import key_id, parse_checkpoint, parse_note, verify_note
from verify.receipt import Check, ReceiptError, Report, verify_receipt
from verify.rfc9162 import leaf_hash, verify_consistency, verify_inclusion
from verify.witnesses import WitnessPolicy

__all__ = [
    "BUNDLE_TYPE",
    "BundleError",
    "MalformedBundle",
    "check_bundle",
    "is_bundle",
    "verify_bundle",
    "verify_document",
]


class BundleError(ReceiptError):
    """A bundle check failed; ``check`` names it."""


# Note verification keys: did -> raw Ed25519 public key (signed-note §Ed25519 wants raw bytes).
NoteKeys = dict[str, bytes]


def verify_document(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
    origin: str | None = None,
    witnesses: WitnessPolicy | None = None,
) -> Report:
    """Verify a bundle, or else a saved response or bare credential (``verify_receipt``).

    Bounded work whatever the input: a document nested deeper or holding more values
    than ``verify.limits`` allows fails ``format`` at once, and a credential tenure would never
    issue fails before any canonicalization. Safe to run in a worker thread; pure.
    ``trusted`` may be ``{did: verify.trust.Period}`` to bound when each key may have signed.
    ``origin`` pins a bundle's log (a receipt alone names none); ``witnesses``, K of whom
    must have cosigned its checkpoint (a receipt alone carries none, so it fails that check).
    """
    try:
        check_bounds(document)
    except MalformedInput as error:
        return Report([Check("format", False, str(error))])
    if is_bundle(document):
        return verify_bundle(document, trusted, origin, witnesses)
    report = _receipt_report(document, trusted, request, entry)
    if witnesses is not None:
        report.add("witnesses", False, "a receipt alone carries no checkpoint: verify its bundle")
    return report


def _receipt_report(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
) -> Report:
    """``verify_receipt``, whose hashing can still raise on JSON that RFC 8785 cannot represent
    (an integer beyond 2**53, say): that is a failed ``format`` check, not a crash."""
    try:
        return verify_receipt(document, trusted, request, entry)
    except VerificationError as error:
        return Report([Check("format", False, str(error))])


def check_bundle(bundle: Any, trusted: Collection[str] | None) -> None:
    """The raising variant: BundleError naming the first failed check."""
    for check in verify_bundle(bundle, trusted).checks:
        if not check.ok:
            raise BundleError(check.name, check.detail)


def verify_bundle(
    bundle: Any,
    trusted: Collection[str] | None,
    origin: str | None = None,
    witnesses: WitnessPolicy | None = None,
) -> Report:
    """Every check of a bundle. ``trusted``: the did:keys to accept (or ``{did: Period}``);
    None trusts nothing: the report then fails ``keys`` and ``issuer``. ``origin``, if given,
    is the log the checkpoint must be of (the ``origin`` check)."""
    report = Report()
    try:
        parsed = parse_bundle(bundle)
    except MalformedInput as error:
        report.add("bundle:format", False, str(error))
        return report
    report.add("bundle:format", True, BUNDLE_TYPE)
    note_keys = _check_keys(report, parsed, trusted)
    receipt = _receipt_report(parsed.receipt, trusted, entry=parsed.entry)
    report.checks += receipt.checks
    report.signed += ["entry, inclusion and checkpoint (signed notes)", *receipt.signed]
    report.unsigned += ["keys[].validFrom/validUntil", *receipt.unsigned]
    _run(report, "entry", lambda: _entry(parsed))
    _run(report, "checkpoint", lambda: _checkpoint(parsed.checkpoint, note_keys, _issuer(parsed)))
    if origin is not None:
        _run(report, "origin", lambda: _pinned(parsed.checkpoint, origin))
    if witnesses is not None:
        _run(report, "witnesses", lambda: witnesses.check(parsed.checkpoint.note))
    _run(report, "inclusion", lambda: _inclusion(parsed))
    if parsed.consistency is not None:
        consistency = parsed.consistency
        _run(report, "consistency", lambda: _consistency(parsed, consistency, note_keys))
    return report


def _run(report: Report, name: str, check: Callable[[], str]) -> bool:
    """Record one check: its detail when it returns, the error when it raises."""
    try:
        detail = check()
    except VerificationError as error:
        return report.add(name, False, str(error))
    return report.add(name, True, detail)


# --- keys and trust ---------------------------------------------------------------------------


def _check_keys(report: Report, bundle: Bundle, trusted: Collection[str] | None) -> NoteKeys:
    """Which keys may sign the checkpoints: the bundle's own, or the trusted ones."""
    try:
        listed = {key.did: _listed_key(key) for key in bundle.keys}
    except VerificationError as error:
        report.add("keys", False, str(error))
        return {}
    if trusted is None:
        dids = ", ".join(listed) or "none"
        detail = f"no trusted key was given; the bundle's own keys ({dids}) prove nothing"
        report.add("keys", False, detail)
        return listed
    untrusted = [did for did in listed if did not in trusted]
    detail = f"not trusted: {', '.join(untrusted)}" if untrusted else "every listed key is trusted"
    report.add("keys", not untrusted, detail)
    return _decode_trusted(trusted)


def _listed_key(key: ListedKey) -> bytes:
    """The raw key of a listed did:key, checked against its multikey. The validity dates a
    bundle lists are unsigned: a key's period comes from the trusted keyring only
    (``verify.trust``), so they are never consulted."""
    if key.did != DID_KEY_PREFIX + key.multibase:
        raise MalformedBundle(f"key {key.did} does not match its publicKeyMultibase")
    return _raw(public_key_from_multibase(key.multibase))


def _decode_trusted(trusted: Collection[str]) -> NoteKeys:
    keys: NoteKeys = {}
    for did in trusted:
        try:
            keys[did] = _raw(public_key_from_did(did))
        except MalformedInput:
            continue  # a trusted entry that is no did:key can sign no note
    return keys


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _issuer(bundle: Bundle) -> str | None:
    credential = bundle.receipt.get("_provenance", bundle.receipt)
    issuer = credential.get("issuer") if isinstance(credential, dict) else None
    return issuer if isinstance(issuer, str) else None


# --- entry, checkpoint, inclusion, consistency ---------------------------------------------


def _entry(bundle: Bundle) -> str:
    """The entry is the leaf the receipt names, at the index the proof proves."""
    ledger = _receipt_ledger(bundle.receipt)
    computed = base64.b64encode(leaf_hash(bundle.entry)).decode()
    if computed != ledger.get("leafHash"):
        raise VerificationError(f"leaf hash {computed} != receipt's {ledger.get('leafHash')}")
    index = bundle.inclusion.index
    if ledger.get("logIndex") != index:
        raise VerificationError(f"receipt logIndex {ledger.get('logIndex')} != proof {index}")
    stated = _entry_index(bundle.entry)
    if stated is not None and stated != index:
        raise VerificationError(f"entry says index {stated}, the proof {index}")
    return f"entry {index} hashes to the receipt's leafHash {computed}"


def _receipt_ledger(receipt: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ledger position the receipt states: in ``data``, or in a bare credential's subject."""
    data = receipt.get("data")
    if not isinstance(data, dict):
        subject = receipt.get("credentialSubject")
        data = subject if isinstance(subject, dict) else {}
    ledger = data.get("ledger")
    if not isinstance(ledger, dict):
        raise VerificationError("the receipt states no ledger position")
    return ledger


def _entry_index(entry: bytes) -> int | None:
    try:
        parsed = loads(entry, "the entry")
    except NotIJSON as error:
        raise VerificationError(f"{error} (DESIGN §4: entries are JCS)") from error
    index = parsed.get("index") if isinstance(parsed, dict) else None
    return index if isinstance(index, int) else None


def _checkpoint(cp: SignedCheckpointJSON, keys: NoteKeys, prefer: str | None) -> str:
    """The note is signed by a trusted key and its body states what the JSON does."""
    signer, text = _open_note(cp, keys, prefer)
    body = parse_checkpoint(text)
    if (body.origin, body.size, body.root_hash) != (cp.origin, cp.tree_size, cp.root_hash):
        stated = f"{cp.origin} {cp.tree_size} {_b64(cp.root_hash)}"
        signed = f"{body.origin} {body.size} {_b64(body.root_hash)}"
        raise VerificationError(f"JSON states {stated}, the signed note {signed}")
    return f"{cp.origin} size {cp.tree_size} root {_b64(cp.root_hash)} signed by {signer}"


def _pinned(cp: SignedCheckpointJSON, origin: str) -> str:
    """The checkpoint is of the log the verifier pinned (its signed note names the origin)."""
    if cp.origin != origin:
        raise VerificationError(f"the checkpoint is of {cp.origin!r}, not the pinned {origin!r}")
    return f"the checkpoint is of {origin}"


def _open_note(cp: SignedCheckpointJSON, keys: NoteKeys, prefer: str | None) -> tuple[str, str]:
    """(signer did, note text) for the first key whose signed-note key ID signs the note."""
    signatures = parse_note(cp.note).signatures
    ordered = sorted(keys.items(), key=lambda item: item[0] != prefer)
    for did, public in ordered:
        kid = key_id(cp.origin, public)
        if any((sig.name, sig.key_id) == (cp.origin, kid) for sig in signatures):
            return did, verify_note(cp.note, cp.origin, public)
    raise VerificationError(f"no trusted key signs the note as {cp.origin!r}")


def _inclusion(bundle: Bundle) -> str:
    """RFC 9162 §2.1.3.2: the audit path leads from the entry's leaf to the checkpoint root."""
    proof, cp = bundle.inclusion, bundle.checkpoint
    if proof.tree_size != cp.tree_size:
        raise VerificationError(f"proof treeSize {proof.tree_size} != checkpoint {cp.tree_size}")
    leaf = leaf_hash(bundle.entry)
    verify_inclusion(proof.index, proof.tree_size, leaf, proof.hashes, cp.root_hash)
    _same_root(_receipt_ledger(bundle.receipt), cp)
    return f"entry {proof.index} is in the tree of size {cp.tree_size}"


def _same_root(ledger: Mapping[str, Any], cp: SignedCheckpointJSON) -> None:
    """A receipt stating the root at the checkpoint's size must state the same root (§4)."""
    if ledger.get("treeSize") == cp.tree_size and ledger.get("rootHash") != _b64(cp.root_hash):
        raise VerificationError(f"receipt root at size {cp.tree_size} differs from checkpoint's")


def _consistency(bundle: Bundle, proof: ConsistencyProof, keys: NoteKeys) -> str:
    """RFC 9162 §2.1.4.2: the later signed checkpoint extends the one the entry is proven in."""
    first, later = bundle.checkpoint, proof.checkpoint
    if (proof.first, proof.second) != (first.tree_size, later.tree_size):
        sizes = f"{first.tree_size} -> {later.tree_size}"
        raise VerificationError(f"proof is {proof.first} -> {proof.second}, checkpoints {sizes}")
    if later.origin != first.origin:
        raise VerificationError(f"later checkpoint is of another log: {later.origin!r}")
    signed = _checkpoint(later, keys, None)
    verify_consistency(
        first.tree_size, later.tree_size, first.root_hash, later.root_hash, proof.hashes
    )
    return f"extends to {signed}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
