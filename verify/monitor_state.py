"""What a log monitor (``verify/monitor.py``) remembers and reports: the checkpoints it saw
(:class:`Seen`), its findings, and :class:`MonitorState`, which round-trips through the JSON
of its state file so a restarted monitor or witness resumes exactly. Also the parsing of the
log's checkpoint and consistency-proof answers. Pure."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from verify.errors import MalformedInput, VerificationError
from verify.invariants import Rules
from verify.note import parse_checkpoint, parse_note

STATE_TYPE = "tenure-monitor-state"
STATE_VERSION = 2


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
    rules: dict[str, Any] = field(
        default_factory=lambda: Rules(ignore_warning, ignore_warning).state_data()
    )
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
            frontier = [b64_field(h, "frontier hash") for h in data["frontier"]]
            trusted = [str(did) for did in data["trusted"]]
            state = cls(trusted, seen, frontier, dict(data["invariants"]), int(data["findings"]))
            _fresh_rules().restore(state.rules)
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


def proof_hashes(data: Any) -> list[bytes]:
    """The hashes of a ``GET /log/proof/consistency`` answer (MalformedInput if it has none)."""
    hashes = data.get("hashes") if isinstance(data, dict) else None
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise MalformedInput("a consistency proof answer has a list of base64 hashes")
    return [b64_field(h, "consistency proof hash") for h in hashes]


def b64_field(value: Any, what: str) -> bytes:
    """A base64 field of a served answer or the state file, strictly decoded (MalformedInput)."""
    if not isinstance(value, str):
        raise MalformedInput(f"{what} is not a base64 string")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"{what} is not base64") from e


def ignore_warning(index: int | None, check: str, message: str) -> None:
    """Warnings (a fencing token that skips a value) are the audit's, not the monitor's."""


def _fresh_rules() -> Rules:
    return Rules(ignore_warning, ignore_warning)
