"""The report of a ledger audit (``verify.audit``): its violations, warnings and counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.errors import VerificationError

__all__ = ["AuditFailed", "AuditReport", "Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    index: int | None
    """The entry concerned (for a checkpoint, the last entry it covers); None for the export."""
    check: str
    message: str

    def __str__(self) -> str:
        where = "export" if self.index is None else f"entry {self.index}"
        return f"{where}: {self.check}: {self.message}"

    def as_data(self) -> dict[str, Any]:
        return {"index": self.index, "check": self.check, "message": self.message}


@dataclass(slots=True)
class AuditReport:
    origin: str
    tree_size: int
    """The size the export's header announces."""
    trusted: bool
    """True when the caller pinned the keys; otherwise the export's own keys were used (and the
    audit fails: they prove consistency, not origin)."""
    proven_size: int | None = None
    """Entries ``[0, proven_size)`` are under a verified checkpoint; None: under none."""
    entries: int = 0
    checkpoints: int = 0
    checkpoints_verified: int = 0
    keys: int = 0
    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)
    signers: dict[int, str] = field(default_factory=dict)
    """The did:key whose signature verified each checkpoint, by tree size."""
    witnesses: str | None = None
    """Who cosigned the ``--witnessed`` checkpoint, when the audit was given one."""

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_data(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "origin": self.origin,
            "treeSize": self.tree_size,
            "trustedKeys": self.trusted,
            "provenSize": self.proven_size,
            "entries": self.entries,
            "checkpoints": self.checkpoints,
            "checkpointsVerified": self.checkpoints_verified,
            "keys": self.keys,
            "signers": {str(size): did for size, did in self.signers.items()},
            "witnesses": self.witnesses,
            "violations": [v.as_data() for v in self.violations],
            "warnings": [w.as_data() for w in self.warnings],
        }


class AuditFailed(VerificationError):
    """A ledger export breaks at least one audit check (DESIGN §6); ``report`` lists every one."""

    def __init__(self, report: AuditReport) -> None:
        count = len(report.violations)
        super().__init__(f"ledger audit found {count} violation{'s' if count != 1 else ''}")
        self.report = report
