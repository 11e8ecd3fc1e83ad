"""`tenure audit --witnessed FILE --witness VKEY …`: an export against a cosigned checkpoint.

The cosigned checkpoint (the JSON of ``GET /api/v1/log/checkpoint`` of a log with witnesses) is
fed to the replay as one more checkpoint record, just before the first entry: it must verify
under a trusted key and its root must be the export's tree at its size, like any other. Then K
of the listed witnesses must have cosigned its note (``verify.witnesses``); the report names
who did. So the audited history is the one the witnesses saw, not only one the log signed."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.audit_report import AuditReport, Violation
from verify.errors import MalformedInput, VerificationError
from verify.export_records import checkpoint_of
from verify.witnesses import WitnessPolicy


def add_witness_options(parser: argparse.ArgumentParser) -> None:
    """``--witnessed``, ``--witness`` (repeatable) and ``--witness-threshold``."""
    parser.add_argument(
        "--witnessed",
        type=Path,
        metavar="FILE",
        help="a cosigned checkpoint (the JSON of GET /api/v1/log/checkpoint) the export must match",
    )
    parser.add_argument(
        "--witness", action="append", default=[], metavar="VKEY", help="a witness's cosigner key"
    )
    parser.add_argument(
        "--witness-threshold", type=int, metavar="K", help="cosignatures needed (default: all)"
    )


@dataclass(frozen=True)
class Witnessed:
    policy: WitnessPolicy
    record: dict[str, Any]

    @classmethod
    def of(cls, args: argparse.Namespace) -> Witnessed | None:
        """From the options, or None without them; MalformedInput naming what is wrong."""
        if args.witnessed is None and not args.witness and args.witness_threshold is None:
            return None
        if args.witnessed is None:
            raise MalformedInput("--witness needs --witnessed FILE (the cosigned checkpoint)")
        policy = WitnessPolicy.of(args.witness, args.witness_threshold)
        try:
            record = json.loads(Path(args.witnessed).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise MalformedInput(f"--witnessed {args.witnessed}: {e}") from e
        if not isinstance(record, dict):
            raise MalformedInput(f"--witnessed {args.witnessed}: not a checkpoint object")
        record = {**record, "type": "checkpoint"}
        try:
            checkpoint_of(record)
        except MalformedInput as e:
            raise MalformedInput(f"--witnessed {args.witnessed}: {e}") from e
        return cls(policy, record)

    def feed(self, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The export's records with the witnessed checkpoint before the first entry."""
        fed = False
        for record in records:
            if not fed and isinstance(record, dict) and record.get("type") == "entry":
                fed = True
                yield self.record
            yield record
        if not fed:
            yield self.record

    def check(self, report: AuditReport) -> None:
        """Record who cosigned, or a violation if fewer than K listed witnesses did."""
        try:
            report.witnesses = self.policy.check(str(self.record["note"]))
        except VerificationError as e:
            report.violations.append(Violation(None, "witnesses", str(e)))
