"""A continuous log monitor's checks (DESIGN §6, as CT monitors and witnesses do), pure.

The monitor remembers the last checkpoint it verified and the compact range of the entries under
it. For each newer checkpoint a log serves it checks, in order:

* **checkpoint-signature**: the C2SP signed note verifies under a trusted key named after its
  origin; **checkpoint-origin**: the origin is the one seen before; **checkpoint-record**: the
  JSON's ``treeSize``/``rootHash`` are the note's;
* **rollback**: the tree is not smaller than the one seen; **split-view**: a tree of the same size
  has the same root, and a larger one is consistent with it (RFC 9162 §2.1.4.2). Both signed
  checkpoints are the evidence: two notes under one key that no append-only log can sign both;
* **entries-root**: the new entries, appended to the compact range, hash to the signed root
  (a log that serves entries other than those it signed, a rewritten entry);
* the lease rules of ``verify.invariants`` over each new entry, and its v1 format
  (``verify.export_records.event_of``), exactly as ``tenure audit`` replays them.

The first four are fatal: the state does not advance past a checkpoint that fails them. Lease
findings are not: the log did sign that history, so the checkpoint is sealed and the findings are
reported (the first ``MAX_FINDINGS`` of a round, then how many more). :class:`MonitorState`
round-trips through JSON, so a restarted monitor resumes exactly; it holds the live leases and
the ``DORMANT_KEPT`` most recently ended resources' fencing tokens, not every resource ever seen.
Pure: no sockets, files or clock; ``api/monitor.py`` does the I/O.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from verify.errors import MalformedInput, ProofError, SignatureError, VerificationError, b64
from verify.export_records import event_of
from verify.invariants import Rules
from verify.multikey import public_key_from_did
from verify.note import parse_checkpoint, parse_note, verify_note
from verify.rfc9162 import EMPTY_ROOT, leaf_hash, node_hash, verify_consistency

__all__ = ["Finding", "Monitor", "MonitorState", "Seen", "Violation", "proof_hashes", "seen_of"]

STATE_TYPE = "tenure-monitor-state"
STATE_VERSION = 2
MAX_FINDINGS = 1000
"""Lease findings a round lists; a hostile log cannot grow the monitor's memory with them."""
DORMANT_KEPT = 10_000
"""Ended resources whose highest fencing token the state keeps (the most recently ended)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A checkpoint as the log served it: its note is the evidence others can check."""

    origin: str
    size: int
    root: bytes
    note: str
    timestamp: str | None = None

    def as_data(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "treeSize": self.size,
            "rootHash": base64.b64encode(self.root).decode(),
            "timestamp": self.timestamp,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    message: str
    index: int | None = None
    evidence: dict[str, Any] | None = None

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"check": self.check, "message": self.message, "index": self.index}
        return data if self.evidence is None else data | {"evidence": self.evidence}

    def __str__(self) -> str:
        where = "" if self.index is None else f"entry {self.index}: "
        return f"{where}{self.check}: {self.message}"


class Violation(VerificationError):
    """A fatal finding: the log served a checkpoint or entries no honest log can serve."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


@dataclass(slots=True)
class MonitorState:
    """All a monitor remembers; ``as_data`` is what its state file holds."""

    trusted: list[str]
    """did:key DIDs a checkpoint must verify under."""
    seen: Seen | None = None
    frontier: list[bytes] = field(default_factory=list)
    """The compact range over [0, seen.size): perfect subtree roots, largest first (§2.1.1)."""
    rules: dict[str, Any] = field(default_factory=lambda: Rules(_ignore, _ignore).state_data())
    findings: int = 0
    """Lease findings reported so far (they do not stop the monitor)."""

    def as_data(self) -> dict[str, Any]:
        return {
            "type": STATE_TYPE,
            "version": STATE_VERSION,
            "trusted": self.trusted,
            "checkpoint": None if self.seen is None else self.seen.as_data(),
            "frontier": [base64.b64encode(h).decode() for h in self.frontier],
            "invariants": self.rules,
            "findings": self.findings,
        }

    @classmethod
    def from_data(cls, data: Any) -> MonitorState:
        """Read a state file's JSON; MalformedInput if it is not one."""
        if not isinstance(data, dict) or data.get("type") != STATE_TYPE:
            raise MalformedInput(f"not a {STATE_TYPE} file")
        if data.get("version") != STATE_VERSION:
            raise MalformedInput(f"unsupported state version {data.get('version')!r}")
        try:
            seen = None if data["checkpoint"] is None else seen_of(data["checkpoint"])
            frontier = [_b64(h, "frontier hash") for h in data["frontier"]]
            trusted = [str(did) for did in data["trusted"]]
            state = cls(trusted, seen, frontier, dict(data["invariants"]), int(data["findings"]))
            Rules(_ignore, _ignore).restore(state.rules)
        except (KeyError, TypeError, ValueError) as e:
            raise MalformedInput(f"state file has the wrong shape: {e}") from e
        size = 0 if seen is None else seen.size
        if len(frontier) != size.bit_count() or any(len(h) != 32 for h in frontier):
            raise MalformedInput("state file: the frontier is not a compact range of the tree")
        return state


def seen_of(data: Any) -> Seen:
    """A ``GET /api/v1/log/checkpoint`` answer, parsed but not verified (MalformedInput)."""
    if not isinstance(data, dict) or not isinstance(data.get("note"), str):
        raise MalformedInput("a checkpoint answer is an object with a note")
    note = data["note"]
    body = parse_checkpoint(parse_note(note).text)
    timestamp = data.get("timestamp")
    stamp = timestamp if isinstance(timestamp, str) else None
    return Seen(body.origin, body.size, body.root_hash, note, stamp)


class Monitor:
    """Advance a :class:`MonitorState` one checkpoint at a time; see the module docstring.

    For each new checkpoint: ``checkpoint``; if ``needs_consistency``, ``consistency``; then
    ``entries`` page by page up to its size; then ``seal``. Lease findings collect in ``found``.
    """

    def __init__(self, state: MonitorState) -> None:
        if not state.trusted:
            raise MalformedInput("a monitor needs at least one trusted key")
        self.state = state
        self.keys = [(did, public_key_from_did(did).public_bytes_raw()) for did in state.trusted]
        self.frontier = list(state.frontier)
        self.size = 0 if state.seen is None else state.seen.size
        self.rules = Rules(self._flag, _ignore)
        self.rules.restore(state.rules)
        self.found: list[Finding] = []
        self.omitted = 0
        """Findings past ``MAX_FINDINGS`` this round: counted, not kept."""

    def checkpoint(self, data: Any) -> Seen:
        """Verify a served checkpoint against the trusted keys and the one seen before."""
        new = seen_of(data)
        self._check_record(data, new)
        self._check_signature(new)
        seen = self.state.seen
        if seen is None:
            return new
        evidence = {"seen": seen.as_data(), "served": new.as_data()}
        if new.origin != seen.origin:
            raise Violation(
                Finding("checkpoint-origin", f"origin {new.origin!r}, seen {seen.origin!r}")
            )
        if new.size < seen.size:
            message = f"served tree size {new.size} after signing size {seen.size}"
            raise Violation(Finding("rollback", message, None, evidence))
        if new.size == seen.size and new.root != seen.root:
            message = f"two roots signed for tree size {new.size}"
            raise Violation(Finding("split-view", message, None, evidence))
        return new

    def needs_consistency(self, new: Seen) -> bool:
        seen = self.state.seen
        return seen is not None and 0 < seen.size < new.size

    def consistency(self, new: Seen, data: Any) -> None:
        """Check a ``GET /log/proof/consistency`` answer from the seen tree to ``new``."""
        seen = self.state.seen
        assert seen is not None
        proof = proof_hashes(data)
        hashes = data["hashes"]
        try:
            verify_consistency(seen.size, new.size, seen.root, new.root, proof)
        except (ProofError, MalformedInput) as e:
            message = f"tree {new.size} is not an extension of the tree {seen.size} seen: {e}"
            evidence = {"seen": seen.as_data(), "served": new.as_data(), "proof": hashes}
            raise Violation(Finding("split-view", message, None, evidence)) from e

    def entries(self, new: Seen, data: Any) -> int:
        """Feed a ``GET /log/entries`` page starting at the next index; return the next one."""
        page = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(page, list) or not page:
            raise MalformedInput(f"the entries page from {self.size} is empty or not a list")
        for item in page:
            index = item.get("index") if isinstance(item, dict) else None
            if index != self.size or index >= new.size or not isinstance(item.get("leaf"), str):
                raise MalformedInput(f"expected entry {self.size} of {new.size}, got {index!r}")
            leaf = _b64(item["leaf"], f"entry {index} leaf")
            self._append(leaf_hash(leaf))
            event = event_of(index, leaf, self._flag)
            if event is not None:
                self.rules.apply(event)
        return self.size

    def seal(self, new: Seen) -> list[Finding]:
        """Check the entries hash to ``new``'s root; then remember it. Return the findings."""
        if self.size != new.size:
            raise MalformedInput(f"sealing tree {new.size} with {self.size} entries fed")
        computed = _range_root(self.frontier)
        if computed != new.root:
            first = 0 if self.state.seen is None else self.state.seen.size
            message = (
                f"entries [{first}, {new.size}) hash to {b64(computed)}, "
                f"the signed root is {b64(new.root)}: the log serves entries it did not sign"
            )
            raise Violation(Finding("entries-root", message, None, {"served": new.as_data()}))
        state = self.state
        state.seen, state.frontier = new, list(self.frontier)
        self.rules.forget_ended(DORMANT_KEPT)
        state.rules = self.rules.state_data()
        state.findings += len(self.found) + self.omitted
        found, self.found = self.found, []
        if self.omitted:
            message = f"{self.omitted} more findings in this round are not listed"
            found.append(Finding("findings-omitted", message))
            self.omitted = 0
        return found

    def _check_record(self, data: dict[str, Any], new: Seen) -> None:
        size, root = data.get("treeSize", new.size), data.get("rootHash")
        if size != new.size or (root is not None and root != base64.b64encode(new.root).decode()):
            message = "the answer's treeSize/rootHash are not the signed note's"
            raise Violation(Finding("checkpoint-record", message, None, {"served": data}))

    def _check_signature(self, new: Seen) -> None:
        for _did, public in self.keys:
            try:
                verify_note(new.note, new.origin, public)
                return
            except (SignatureError, MalformedInput):
                continue
        message = f"no trusted key verifies the note of tree {new.size} as {new.origin!r}"
        raise Violation(Finding("checkpoint-signature", message, None, {"served": new.as_data()}))

    def _append(self, leaf: bytes) -> None:
        h, idx, hashes = leaf, self.size, self.frontier
        while idx & 1:  # each trailing 1-bit closes a perfect subtree (§2.1.1)
            h = node_hash(hashes.pop(), h)
            idx >>= 1
        hashes.append(h)
        self.size += 1

    def _flag(self, index: int | None, check: str, message: str) -> None:
        if len(self.found) < MAX_FINDINGS:
            self.found.append(Finding(check, message, index))
        else:
            self.omitted += 1


def proof_hashes(data: Any) -> list[bytes]:
    """The hashes of a ``GET /log/proof/consistency`` answer (MalformedInput if it has none)."""
    hashes = data.get("hashes") if isinstance(data, dict) else None
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise MalformedInput("a consistency proof answer has a list of base64 hashes")
    return [_b64(h, "consistency proof hash") for h in hashes]


def _range_root(hashes: list[bytes]) -> bytes:
    if not hashes:
        return EMPTY_ROOT
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise MalformedInput(f"{what} is not a base64 string")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"{what} is not base64") from e


def _ignore(index: int | None, check: str, message: str) -> None:
    """Warnings (a fencing token that skips a value) are the audit's, not the monitor's."""
