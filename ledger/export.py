"""Write the whole ledger as JSON Lines for ``tenure audit`` (DESIGN §6, docs/export-format.md).

Everything is read in one SQLite read transaction, so the entries, keys and checkpoints are one
consistent snapshot even while the server keeps appending (WAL readers never block the writer).
Entries stream through a cursor; each checkpoint is written right after the entry that completes
its tree, so a reader checks it in the same single pass that hashes the entries.

The export ends with a checkpoint covering all of it (``tenure audit`` fails otherwise): when the
latest stored checkpoint is older than the snapshot, one is signed for the snapshot's size with
the log's key (``ledger.log.LogReader.checkpoint``, the server's own signing code). It is written
to the export only, not stored: the export stays a read, and any later checkpoint the server
signs is of the same append-only tree.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ledger.entries import iso
from ledger.keyring import SigningKey
from ledger.log import LogReader
from ledger.state import tree_size
from ledger.store import default_origin
from verify.audit import EXPORT_TYPE, EXPORT_VERSION, PROGRESS_EVERY

__all__ = ["export_ledger"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def export_ledger(
    conn: sqlite3.Connection,
    out: TextIO,
    progress: Callable[[int], None] | None = None,
    origin: str | None = None,
    signer: tuple[SigningKey, int] | None = None,
) -> int:
    """Write the export to ``out``; return the number of entries written.

    ``origin`` defaults to the one the latest checkpoint names (the server may run with
    ``--origin``), else the log's default origin. ``signer`` is (the log's active key, now in
    ms): with it, a final checkpoint is signed if no stored one covers the whole snapshot.
    """
    began = not conn.in_transaction
    if began:
        conn.execute("BEGIN")  # deferred: the first read fixes the snapshot
    try:
        size = tree_size(conn)
        origin = origin or _checkpoint_origin(conn) or default_origin(conn)
        _write(out, _header(origin, size))
        for key in _keys(conn):
            _write(out, key)
        written = _entries_and_checkpoints(conn, out, size, progress)
        if signer is not None:
            _final_checkpoint(LogReader(conn, origin, signer[0]), out, signer[1])
        return written
    finally:
        if began:
            conn.execute("COMMIT")


def _header(origin: str, size: int) -> dict[str, Any]:
    return {"type": EXPORT_TYPE, "version": EXPORT_VERSION, "origin": origin, "treeSize": size}


def _keys(conn: sqlite3.Connection) -> Iterator[dict[str, Any]]:
    sql = "SELECT did, multikey, valid_from, valid_until FROM signing_keys ORDER BY valid_from"
    for did, multikey, start, end in conn.execute(sql):
        yield {
            "type": "key",
            "did": did,
            "publicKeyMultibase": multikey,
            "validFrom": iso(start),
            "validUntil": None if end is None else iso(end),
        }


def _entries_and_checkpoints(
    conn: sqlite3.Connection, out: TextIO, size: int, progress: Callable[[int], None] | None
) -> int:
    checkpoints = _checkpoints(conn, size)
    upcoming = next(checkpoints, None)
    while upcoming is not None and upcoming["treeSize"] == 0:
        _write(out, upcoming)
        upcoming = next(checkpoints, None)
    written = 0
    sql = "SELECT idx, leaf FROM entries WHERE idx < ? ORDER BY idx"
    for idx, leaf in conn.execute(sql, (size,)):
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


def _checkpoints(conn: sqlite3.Connection, size: int) -> Iterator[dict[str, Any]]:
    sql = "SELECT tree_size, root_hash, timestamp, note FROM checkpoints WHERE tree_size <= ?"
    for tree, root, timestamp, note in conn.execute(sql + " ORDER BY tree_size", (size,)):
        yield {
            "type": "checkpoint",
            "treeSize": tree,
            "rootHash": _b64(root),
            "timestamp": iso(timestamp),
            "note": note,
        }


def _final_checkpoint(log: LogReader, out: TextIO, now: int) -> None:
    """Sign (but do not store) a checkpoint of the snapshot's size unless the latest covers it."""
    signed, new = log.checkpoint(now)
    if new is not None:
        record = signed.as_data()
        del record["origin"]
        _write(out, {"type": "checkpoint", **record})


def _checkpoint_origin(conn: sqlite3.Connection) -> str | None:
    sql = "SELECT note FROM checkpoints ORDER BY tree_size DESC LIMIT 1"
    row = conn.execute(sql).fetchone()
    return None if row is None else str(row[0]).split("\n", 1)[0]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(_ENCODER.encode(record))
    out.write("\n")
