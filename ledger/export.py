"""Write the whole ledger as JSON Lines for ``tenure audit`` (DESIGN §6, docs/export-format.md).

Everything is read from one export snapshot of the storage (``Storage.export_snapshot``), so the
entries, keys and checkpoints are one consistent view even while the server keeps appending.
Entries stream through a cursor; each checkpoint is written right after the entry that completes
its tree, so a reader checks it in the same single pass that hashes the entries.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ledger.entries import iso
from ledger.storage import Snapshot, Storage, default_origin
from verify.audit import EXPORT_TYPE, EXPORT_VERSION, PROGRESS_EVERY

__all__ = ["export_ledger"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def export_ledger(
    storage: Storage,
    out: TextIO,
    progress: Callable[[int], None] | None = None,
    origin: str | None = None,
) -> int:
    """Write the export to ``out``; return the number of entries written.

    ``origin`` defaults to the one the latest checkpoint names (the server may run with
    ``--origin``), else the log's default origin.
    """
    with storage.export_snapshot() as snapshot:
        size = snapshot.tree_size()
        origin = origin or _checkpoint_origin(snapshot) or default_origin(snapshot.log_id())
        _write(out, _header(origin, size))
        for key in _keys(snapshot):
            _write(out, key)
        return _entries_and_checkpoints(snapshot, out, size, progress)


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
) -> int:
    checkpoints = _checkpoints(snapshot, size)
    upcoming = next(checkpoints, None)
    while upcoming is not None and upcoming["treeSize"] == 0:
        _write(out, upcoming)
        upcoming = next(checkpoints, None)
    written = 0
    for idx, leaf in snapshot.entries(size):
        _write(out, {"type": "entry", "index": idx, "leaf": _b64(leaf)})
        written += 1
        while upcoming is not None and upcoming["treeSize"] <= idx + 1:
            _write(out, upcoming)
            upcoming = next(checkpoints, None)
        if progress is not None and written % PROGRESS_EVERY == 0:
            progress(written)
    for rest in (upcoming, *checkpoints):  # only if entries are missing: the audit will say
        if rest is not None:
            _write(out, rest)
    return written


def _checkpoints(snapshot: Snapshot, size: int) -> Iterator[dict[str, Any]]:
    for checkpoint in snapshot.checkpoints(size):
        yield {
            "type": "checkpoint",
            "treeSize": checkpoint.tree_size,
            "rootHash": _b64(checkpoint.root_hash),
            "timestamp": iso(checkpoint.timestamp),
            "note": checkpoint.note,
        }


def _checkpoint_origin(snapshot: Snapshot) -> str | None:
    latest = snapshot.latest_checkpoint()
    return None if latest is None else latest.note.split("\n", 1)[0]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(_ENCODER.encode(record))
    out.write("\n")
