"""Replay a whole ledger export (DESIGN §6): every root, every signature, the lease invariants.

The input is the parsed records of an export (docs/export-format.md): a header, the signing keys,
then the entries in index order with each checkpoint right after the entry that completes its
tree. One pass: O(log n) memory for the tree, plus each resource whose lease or lifecycle still
runs and one fencing token per resource ever granted (rule 2 needs it; ``Rules.forget_ended``,
see :data:`FORGET_EVERY`). The RFC 9162 §2.1.1 root of ``[0, size)`` is folded from a compact
range (the perfect subtrees tiling the prefix), so each checkpoint is checked the moment its
last entry is hashed.

Checks, each reported as a :class:`Violation` with the entry index it concerns:

* **ledger**: indices contiguous from 0; each entry's ``index`` equals its position; its bytes are
  JSON, canonical RFC 8785 (DESIGN §4) and of the v1 shape (``verify.export_records``).
* **checkpoints**: the C2SP signed note verifies under a listed (or trusted) key named after the
  origin, its body parses, names the origin, and its root is the recomputed root. A checkpoint's
  violation carries the index of the last entry it covers.
* **invariants** per (tenant, resource), DESIGN §2: fencing, capacity, owner, expiry and
  lifecycle rules, listed in ``verify.invariants``.

* **coverage**: every entry the audit reports on is proven by a checkpoint whose
  signature verifies under a trusted key: the export must end with one covering all of it
  (``tenure export`` signs one if needed). Entries beyond the last verified checkpoint, an export
  with no verified checkpoint at all (even an empty one), and an audit with no trusted key given
  are violations. The header's ``treeSize`` is unsigned: it only announces, and is never trusted.

Warnings (not violations): a fencing token that skips a value, a checkpoint signed by a listed
key outside that key's validity period.

Pure: the caller reads the file (``parse_lines`` turns its lines into records).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection, Iterable
from typing import Any

from verify.audit_report import AuditFailed, AuditReport, Violation
from verify.compact import CompactRange
from verify.errors import MalformedInput, SignatureError, b64
from verify.export_records import (
    EXPORT_TYPE,
    EXPORT_VERSION,
    Checkpoint,
    Key,
    checkpoint_of,
    entry_of,
    event_of,
    header_of,
    key_of,
    parse_lines,
)
from verify.invariants import Rules
from verify.limits import check_bounds
from verify.multikey import public_key_from_did
from verify.note import parse_checkpoint, verify_note
from verify.rfc9162 import leaf_hash

__all__ = [
    "EXPORT_TYPE",
    "EXPORT_VERSION",
    "AuditFailed",
    "AuditReport",
    "Violation",
    "audit",
    "check_audit",
    "parse_lines",
]

PROGRESS_EVERY = 1000  # entries between progress calls: a bar redraws smoothly, cheaply
FORGET_EVERY = 1 << 16
"""Entries at least between shrinking ended resources to their highest fencing token, so the
state stays the size of what is live plus a token per resource; at least as many as the
resources left whole, so the scans cost no more than the entries between them."""

Progress = Callable[[int], None]


def audit(
    records: Iterable[dict[str, Any]],
    trusted_keys: Collection[str] | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Replay an export; the report lists every violation. MalformedInput if it is no export.

    ``trusted_keys`` (did:key DIDs), when given, are the only keys a checkpoint may verify under;
    otherwise the export's own key records are used, which proves consistency, not origin.
    """
    stream = iter(records)
    header = next(stream, None)
    if header is None:
        raise MalformedInput("empty export: no header record")
    if type(header) is not dict:
        raise MalformedInput("the export header is not a JSON object")
    check_bounds(header, "the export header", max_depth=2, max_nodes=64)
    replay = _Replay(header_of(header), trusted_keys, progress)
    for record in stream:
        replay.feed(record)
    return replay.finish()


def check_audit(
    records: Iterable[dict[str, Any]],
    trusted_keys: Collection[str] | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Like :func:`audit`, but raise AuditFailed (carrying the report) on any violation."""
    report = audit(records, trusted_keys, progress)
    if not report.ok:
        raise AuditFailed(report)
    return report


# -- the replay ----------------------------------------------------------------------------


class _Replay:
    def __init__(
        self, header: tuple[str, int], trusted: Collection[str] | None, progress: Progress | None
    ) -> None:
        self.origin, size = header
        self.report = AuditReport(self.origin, size, trusted is not None)
        self.trusted = None if trusted is None else dict(_trusted(did) for did in trusted)
        self.keys: list[Key] = []
        self.tree = CompactRange()
        # Checkpoints read ahead of their last entry: a heap by size (linear-time overall).
        self.pending: list[tuple[int, int, Checkpoint]] = []
        self.arrival = itertools.count()
        self.sealed: int | None = None  # the largest checkpoint whose signature and root hold
        self.next_index = 0
        self.next_forget = FORGET_EVERY
        self.rules = Rules(self.violation, self.warning)
        self.progress = progress

    def feed(self, record: dict[str, Any]) -> None:
        if type(record) is not dict:
            raise MalformedInput("every export record is a JSON object")
        kind = record.get("type")
        if kind == "entry":  # entry_of reads only its int index and str leaf: no bound needed
            self.entry(record)
            return
        check_bounds(record, "an export record", max_depth=2, max_nodes=64)
        if kind == "checkpoint":
            self.checkpoint(checkpoint_of(record))
        elif kind == "key":
            if self.tree.size or self.report.checkpoints:
                raise MalformedInput("key records must come before entries and checkpoints")
            self.keys.append(key_of(record))
            self.report.keys += 1
        else:
            raise MalformedInput(f"unknown record type {kind!r} in a version 1 export")

    def entry(self, record: dict[str, Any]) -> None:
        index, data = entry_of(record, self.tree.size)
        if index != self.next_index:
            self.violation(index, "index-gap", f"expected entry {self.next_index}, got {index}")
        self.next_index = index + 1
        self.tree.append(leaf_hash(data))
        event = event_of(index, data, self.violation)
        if event is not None:
            self.rules.apply(event)
        self.report.entries = size = self.tree.size
        while self.pending and self.pending[0][0] == size:
            self.seal(heapq.heappop(self.pending)[2])
        if self.progress is not None and size % PROGRESS_EVERY == 0:
            self.progress(size)
        if size >= self.next_forget:
            self.rules.forget_ended()
            self.next_forget = size + max(FORGET_EVERY, len(self.rules.resources))

    def checkpoint(self, cp: Checkpoint) -> None:
        self.report.checkpoints += 1
        if cp.size == self.tree.size:
            self.seal(cp)
        elif cp.size > self.tree.size:
            heapq.heappush(self.pending, (cp.size, next(self.arrival), cp))
        else:
            message = f"checkpoint of size {cp.size} comes after entry {self.tree.size - 1}"
            self.violation(cp.last, "checkpoint-order", message + "; one pass cannot check it")

    def seal(self, cp: Checkpoint) -> None:
        """Check one checkpoint against the tree of exactly its size (C2SP tlog-checkpoint)."""
        text = self.signed_text(cp)
        try:
            body = parse_checkpoint(text if text is not None else _unsigned_text(cp.note))
        except MalformedInput as e:
            self.violation(cp.last, "checkpoint-body", str(e))
            return
        if body.origin != self.origin:
            self.violation(cp.last, "checkpoint-origin", f"origin {body.origin!r}")
        if (body.size, body.root_hash) != (cp.size, cp.root):
            self.violation(cp.last, "checkpoint-record", "treeSize/rootHash differ from the note")
        computed = self.tree.root()
        if body.root_hash != computed:
            span = f"entries [{self.sealed or 0}, {cp.size})"
            message = f"signed root {b64(body.root_hash)}, computed {b64(computed)} over {span}"
            self.violation(cp.last, "checkpoint-root", message)
        elif text is not None and body.origin == self.origin:
            self.report.checkpoints_verified += 1
            self.sealed = max(self.sealed or 0, cp.size)
            self.report.proven_size = self.sealed

    def signed_text(self, cp: Checkpoint) -> str | None:
        """The note's text if a key verifies it; trusted, then covering keys tried first."""
        trusted = self.trusted
        keys = sorted(
            self.candidates(),
            key=lambda k: (
                trusted is not None and k.did not in trusted,
                not k.covers(cp.timestamp),
            ),
        )
        for key in keys:
            try:
                text = verify_note(cp.note, self.origin, key.public)
            except (SignatureError, MalformedInput):
                continue
            self.report.signers[cp.size] = key.did
            if trusted is not None and key.did not in trusted:
                self.violation(cp.last, "untrusted-key", f"signed by {key.did}, not trusted")
                return None
            if not key.covers(cp.timestamp):
                message = f"signed at {cp.timestamp} by {key.did} outside its validity period"
                self.warning(cp.last, "key-validity", message)
            return text
        message = f"no key verifies the note of checkpoint {cp.size} as {self.origin!r}"
        self.violation(cp.last, "checkpoint-signature", message)
        return None

    def candidates(self) -> list[Key]:
        if self.trusted is None:
            return self.keys
        listed = {key.did for key in self.keys}
        return self.keys + [Key(did, raw) for did, raw in self.trusted.items() if did not in listed]

    def finish(self) -> AuditReport:
        report = self.report
        for _, _, cp in sorted(self.pending):
            message = f"checkpoint of size {cp.size}, but the export has {self.tree.size} entries"
            self.violation(cp.last, "checkpoint-size", message)
        if report.tree_size != self.tree.size:
            message = f"header announces {report.tree_size} entries, found {self.tree.size}"
            self.violation(None, "export-size", message)
        self.coverage()
        return report

    def coverage(self) -> None:
        """Nothing passes unless a trusted, verified checkpoint covers every entry."""
        if self.trusted is None:
            message = (
                "no trusted key was given: the checkpoints verify only under keys the export"
                " lists itself, which proves consistency, not origin (pass --trust did:key:…)"
            )
            self.violation(None, "untrusted", message)
        size = self.tree.size
        if self.sealed is None:
            message = f"no checkpoint verifies, so none of the {size} entries is proven"
            self.violation(None, "uncovered", message)
        elif self.sealed < size:
            message = f"entries [{self.sealed}, {size}) are under no verified checkpoint"
            self.violation(self.sealed, "uncovered", message)

    def violation(self, index: int | None, check: str, message: str) -> None:
        self.report.violations.append(Violation(index, check, message))

    def warning(self, index: int | None, check: str, message: str) -> None:
        self.report.warnings.append(Violation(index, check, message))


def _trusted(did: str) -> tuple[str, bytes]:
    return did, public_key_from_did(did).public_bytes_raw()


def _unsigned_text(note: str) -> str:
    """The text part of a note no key verified, to still compare its root."""
    split = note.rfind("\n\n")
    return note[: split + 1] if split >= 0 else note
