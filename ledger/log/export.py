"""Write the whole ledger as JSON Lines for ``tenure audit`` (DESIGN §6, docs/export-format.md).

Everything is read from one export snapshot of the storage (``Storage.export_snapshot``), so the
entries, keys and checkpoints are one consistent view even while the server keeps appending.
Entries stream through a cursor; each checkpoint is written right after the entry that completes
its tree, so a reader checks it in the same single pass that hashes the entries.

The export ends with a checkpoint covering all of it (``tenure audit`` fails otherwise): when the
latest stored checkpoint is older than the snapshot, one is signed for the snapshot's size with
the log's key over the root of the entries streamed. It is written to the export only, not
stored: the export stays a read, and any later checkpoint the server signs is of the same tree.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ledger.keys.keyring import SigningKey
from ledger.location import default_origin
from ledger.log.checkpoint import checkpoint_body, sign_note
from ledger.log.merkle import root_at
from ledger.log.reading import LedgerReader
from ledger.log.text import iso
from ledger.storage import Snapshot, StorageError
from verify.audit import EXPORT_TYPE, EXPORT_VERSION, PROGRESS_EVERY
from verify.compact import CompactRange
from verify.rfc9162 import leaf_hash

__all__ = ["export_ledger"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def export_ledger(
    storage: LedgerReader,
    out: TextIO,
    progress: Callable[[int], None] | None = None,
    origin: str | None = None,
    signer: tuple[SigningKey, int] | None = None,
    host_name: str | None = None,
) -> int:
    """Write the export to ``out``; return the number of entries written.

    ``origin`` defaults to the one the latest checkpoint names (the server may run with
    ``--origin``), else the log's default origin (under ``host_name``, as the server's). ``signer``
    is (the log's active key, now in ms): with it, a final checkpoint is signed if no stored one
    covers the whole snapshot.
    """
    with storage.export_snapshot() as snapshot:
        size = snapshot.tree_size()
        origin = (
            origin or _checkpoint_origin(snapshot) or default_origin(snapshot.log_id(), host_name)
        )
        _write(out, _header(origin, size))
        for key in _keys(snapshot):
            _write(out, key)
        tree, covered = _entries_and_checkpoints(snapshot, out, size, progress)
        if signer is not None and (covered is None or covered < tree.size):
            if tree.root() != root_at(tree.size, snapshot.node):
                raise StorageError("the stored tree does not match the stored entries")
            _write(out, _final_checkpoint(origin, tree, *signer))
        return tree.size


def _header(origin: str, size: int) -> dict[str, Any]:
    return {"type": EXPORT_TYPE, "version": EXPORT_VERSION, "origin": origin, "treeSize": size}


def _keys(snapshot: Snapshot) -> Iterator[dict[str, Any]]:
    for key in snapshot.signing_keys():
        yield {
            "type": "key",
            "did": key.did,
            "publicKeyMultibase": key.multikey,
            "validFrom": iso(key.valid_from),
            "validUntil": None if key.valid_until is None else iso(key.valid_until),
        }


def _entries_and_checkpoints(
    snapshot: Snapshot, out: TextIO, size: int, progress: Callable[[int], None] | None
) -> tuple[CompactRange, int | None]:
    """Stream entries with each stored checkpoint after its last entry; return the tree of the
    entries written and the largest stored checkpoint size written (None: none was)."""
    checkpoints = _checkpoints(snapshot, size)
    covered: int | None = None
    upcoming = next(checkpoints, None)
    while upcoming is not None and upcoming["treeSize"] == 0:
        _write(out, upcoming)
        covered = 0
        upcoming = next(checkpoints, None)
    tree = CompactRange()
    for idx, leaf in snapshot.entries(size):
        _write(out, {"type": "entry", "index": idx, "leaf": _b64(leaf)})
        tree.append(leaf_hash(leaf))
        while upcoming is not None and upcoming["treeSize"] <= idx + 1:
            _write(out, upcoming)
            covered = max(covered or 0, upcoming["treeSize"])
            upcoming = next(checkpoints, None)
        if progress is not None and tree.size % PROGRESS_EVERY == 0:
            progress(tree.size)
    for rest in (upcoming, *checkpoints):  # only if entries are missing: the audit will say
        if rest is not None:
            _write(out, rest)
    return tree, covered


def _checkpoints(snapshot: Snapshot, size: int) -> Iterator[dict[str, Any]]:
    for checkpoint in snapshot.checkpoints(size):
        yield {
            "type": "checkpoint",
            "treeSize": checkpoint.tree_size,
            "rootHash": _b64(checkpoint.root_hash),
            "timestamp": iso(checkpoint.timestamp),
            "note": checkpoint.note,
        }


def _final_checkpoint(origin: str, tree: CompactRange, key: SigningKey, now: int) -> dict[str, Any]:
    """A checkpoint of the snapshot's tree, signed with the log's key but not stored: the
    export stays a read, and any checkpoint the server signs later is of the same tree."""
    root = tree.root()
    note = sign_note(checkpoint_body(origin, tree.size, root), origin, key.private_key)
    return {
        "type": "checkpoint",
        "treeSize": tree.size,
        "rootHash": _b64(root),
        "timestamp": iso(now),
        "note": note,
    }


def _checkpoint_origin(snapshot: Snapshot) -> str | None:
    latest = snapshot.latest_checkpoint()
    return None if latest is None else latest.note.split("\n", 1)[0]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(_ENCODER.encode(record))
    out.write("\n")
