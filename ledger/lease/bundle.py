"""Assembling an offline receipt bundle (DESIGN §6; docs/bundle-format.md); the issuing side.

Pure given a LogReader and an Issuer: the latest signed checkpoint, the time and the request's
canonical bytes are arguments, and the route commits the checkpoint before calling (a bundle
never proves into a checkpoint the disk might lose). ``verify/bundle.py`` is the verifying half.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.lease.entries import pseudonyms_of
from ledger.lease.provenance import Issuer
from ledger.log.text import b64
from ledger.log.view import LogReader, OutOfRange, SignedCheckpoint
from verify.bundle import BUNDLE_TYPE
from verify.rfc9162 import leaf_hash

KEY_FIELDS = ("did", "publicKeyMultibase", "validFrom", "validUntil")


def build_bundle(
    log: LogReader,
    issuer: Issuer,
    index: int,
    latest: SignedCheckpoint,
    tree_size: int | None,
    request: bytes,
    now: str,
    suite: str,
    receipt: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The bundle of entry ``index``, proven into the checkpoint of ``tree_size`` (default: the
    latest) and, when that is an earlier one, extended to ``latest`` by a consistency proof.
    ``receipt``, a caller's own saved response (:func:`saved_receipt`), replaces the receipt
    the server would issue."""
    anchor = _anchor(log, latest, tree_size)
    if not 0 <= index < anchor.tree_size:
        raise OutOfRange("index", _index_message(index, anchor.tree_size))
    entry = log.entry(index)
    if entry is None:  # the durable tree covers it, so this is a storage fault
        raise RuntimeError(f"entry {index} is inside the tree but not stored")
    proof = log.inclusion(index, anchor.tree_size)
    if receipt is None:
        receipt = issue_receipt(issuer, index, entry, anchor, request, now, suite)
    bundle: dict[str, Any] = {
        "type": BUNDLE_TYPE,
        "receipt": receipt,
        "entry": b64(entry),
        "inclusion": {k: proof[k] for k in ("index", "treeSize", "hashes")},
        "checkpoint": anchor.as_data(),
    }
    signers = {_issuer_of(receipt), _signer(log, anchor)}
    if anchor.tree_size < latest.tree_size:
        bundle["consistency"] = _consistency(log, anchor, latest)
        signers.add(_signer(log, latest))
    published = log.keys()  # every key ever used (GET /api/v1/keys); list the signers'
    bundle["keys"] = [_public(key) for key in published if key["did"] in signers]
    return bundle


def issue_receipt(
    issuer: Issuer,
    index: int,
    entry: bytes,
    anchor: SignedCheckpoint,
    request: bytes,
    now: str,
    suite: str,
) -> dict[str, Any]:
    """A response ``{data, _provenance}`` stating that entry ``index`` is in the checkpoint's
    tree; the manifest's ``tenure.ledger.entry`` assertion binds the entry's exact bytes."""
    parsed = json.loads(entry)
    data = {
        "status": "pass",
        "op": "bundle",
        "outcome": "INCLUDED",
        "ledger": {
            "logIndex": index,
            "leafHash": b64(leaf_hash(entry)),
            "treeSize": anchor.tree_size,
            "rootHash": b64(anchor.root_hash),
        },
        "entry": parsed,
    }
    names = pseudonyms_of(parsed)
    credential = issuer.issue(data, request, entry, names or None, now, suite)
    return {"data": data, "_provenance": credential}


class NotAReceipt(ValueError):
    """A saved response that names no ledger entry (answered 422, naming the field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def saved_receipt(document: Any) -> tuple[dict[str, Any], int]:
    """A caller's saved response ``{data, _provenance}`` (``data.ownerToken`` dropped: the
    manifest hashes ``data`` without it) and the ledger index its ``data.ledger`` names."""
    if not isinstance(document, dict) or not isinstance(document.get("_provenance"), dict):
        raise NotAReceipt("_provenance", "send a saved response: {data, _provenance}")
    data = document.get("data")
    ledger = data.get("ledger") if isinstance(data, dict) else None
    index = ledger.get("logIndex") if isinstance(ledger, dict) else None
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        message = "data.ledger.logIndex must name the entry the call appended"
        raise NotAReceipt("data.ledger.logIndex", message)
    assert isinstance(data, dict)
    kept = {k: v for k, v in data.items() if k != "ownerToken"}
    return {"data": kept, "_provenance": document["_provenance"]}, index


def _issuer_of(receipt: dict[str, Any]) -> str:
    issuer = receipt.get("_provenance", {}).get("issuer")
    return issuer if isinstance(issuer, str) else ""


def _anchor(log: LogReader, latest: SignedCheckpoint, tree_size: int | None) -> SignedCheckpoint:
    if tree_size is None or tree_size == latest.tree_size:
        return latest
    if tree_size > latest.tree_size:
        message = f"treeSize must be 1..{latest.tree_size} (the latest checkpoint's size)"
        raise OutOfRange("treeSize", message)
    found = log.stored_checkpoint(tree_size)
    if found is None:
        message = f"no checkpoint was signed at treeSize {tree_size}; see /api/v1/log/checkpoint"
        raise OutOfRange("treeSize", message)
    return found


def _index_message(index: int, size: int) -> str:
    if size == 0:
        return f"index {index} is outside the tree: the checkpoint's tree is empty"
    return f"index must be 0..{size - 1} (the checkpoint's tree size is {size})"


def _consistency(
    log: LogReader, anchor: SignedCheckpoint, latest: SignedCheckpoint
) -> dict[str, Any]:
    proof = log.consistency(anchor.tree_size, latest.tree_size)
    return {
        "first": proof["first"],
        "second": proof["second"],
        "hashes": proof["hashes"],
        "checkpoint": latest.as_data(),
    }


def _signer(log: LogReader, checkpoint: SignedCheckpoint) -> str:
    """The did of the key that signed a stored checkpoint (the active key if not stored yet)."""
    return log.checkpoint_signer(checkpoint.tree_size)


def _public(key: dict[str, Any]) -> dict[str, Any]:
    return {name: key[name] for name in KEY_FIELDS}
