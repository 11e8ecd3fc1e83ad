"""The checks of a receipt bundle that ``verify/bundle.py`` runs and reports, one function
each: which keys may sign (``keys``), the entry, the signed checkpoint and its origin, and the
RFC 9162 inclusion and consistency proofs. Each returns its detail or raises
``VerificationError``; pure."""

from __future__ import annotations

import base64
from collections.abc import Collection, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.bundle_format import (
    Bundle,
    ConsistencyProof,
    ListedKey,
    MalformedBundle,
    SignedCheckpointJSON,
)
from verify.errors import MalformedInput, VerificationError
from verify.ijson import NotIJSON, loads
from verify.multikey import DID_KEY_PREFIX, public_key_from_did, public_key_from_multibase
from verify.note import key_id, parse_checkpoint, parse_note, verify_note
from verify.receipt import Report
from verify.rfc9162 import leaf_hash, verify_consistency, verify_inclusion

# Note verification keys: did -> raw Ed25519 public key (signed-note §Ed25519 wants raw bytes).
NoteKeys = dict[str, bytes]


# --- keys and trust ---------------------------------------------------------------------------


def check_keys(report: Report, bundle: Bundle, trusted: Collection[str] | None) -> NoteKeys:
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


def issuer(bundle: Bundle) -> str | None:
    credential = bundle.receipt.get("_provenance", bundle.receipt)
    issuer = credential.get("issuer") if isinstance(credential, dict) else None
    return issuer if isinstance(issuer, str) else None


# --- entry, checkpoint, inclusion, consistency ---------------------------------------------


def check_entry(bundle: Bundle) -> str:
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


def check_checkpoint(cp: SignedCheckpointJSON, keys: NoteKeys, prefer: str | None) -> str:
    """The note is signed by a trusted key and its body states what the JSON does."""
    signer, text = _open_note(cp, keys, prefer)
    body = parse_checkpoint(text)
    if (body.origin, body.size, body.root_hash) != (cp.origin, cp.tree_size, cp.root_hash):
        stated = f"{cp.origin} {cp.tree_size} {_b64(cp.root_hash)}"
        signed = f"{body.origin} {body.size} {_b64(body.root_hash)}"
        raise VerificationError(f"JSON states {stated}, the signed note {signed}")
    return f"{cp.origin} size {cp.tree_size} root {_b64(cp.root_hash)} signed by {signer}"


def check_origin(cp: SignedCheckpointJSON, origin: str) -> str:
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


def check_inclusion(bundle: Bundle) -> str:
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


def check_consistency(bundle: Bundle, proof: ConsistencyProof, keys: NoteKeys) -> str:
    """RFC 9162 §2.1.4.2: the later signed checkpoint extends the one the entry is proven in."""
    first, later = bundle.checkpoint, proof.checkpoint
    if (proof.first, proof.second) != (first.tree_size, later.tree_size):
        sizes = f"{first.tree_size} -> {later.tree_size}"
        raise VerificationError(f"proof is {proof.first} -> {proof.second}, checkpoints {sizes}")
    if later.origin != first.origin:
        raise VerificationError(f"later checkpoint is of another log: {later.origin!r}")
    signed = check_checkpoint(later, keys, None)
    verify_consistency(
        first.tree_size, later.tree_size, first.root_hash, later.root_hash, proof.hashes
    )
    return f"extends to {signed}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
