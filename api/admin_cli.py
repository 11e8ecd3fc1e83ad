"""The operator's subcommands of `tenure`: apikey, keys, export, audit.

Each works on an existing ledger or key folder and refuses, naming the folder, when there is
none: a typo in ``--data`` must not create a fresh empty ledger beside the real one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from api import apikey_cli
from api.database_option import add_database_option, ledger_location, ledger_name
from api.progress import Progress
from verify.audit_witness import add_witness_options

NO_LEDGER = "no ledger in {} (give the folder `tenure serve --data` uses)"


def add_parsers(commands: Any) -> None:
    """Add ``keys``, ``apikey``, ``export`` and ``audit`` to the ``tenure`` subcommands."""
    keys = commands.add_parser("keys", help="show or rotate the signing key")
    key_actions = keys.add_subparsers(dest="action", required=True)
    for action, text in (("show", "print the active key"), ("rotate", "add a new signing key")):
        sub = key_actions.add_parser(action, help=text)
        sub.add_argument("--keys", type=Path, default=Path("keys"))
    apikey_cli.add_parser(commands)
    _add_export(commands)
    _add_audit(commands)


def _add_export(commands: Any) -> None:
    export = commands.add_parser("export", help="write the ledger as JSON Lines for `audit`")
    export.add_argument("--data", type=Path, default=Path("data"), help="ledger folder")
    add_database_option(export)
    export.add_argument("--out", type=Path, help="the JSON Lines export file to write")
    export.add_argument(
        "--tiles", type=Path, metavar="DIR", help="write the log as static C2SP tlog-tiles in DIR"
    )
    export.add_argument(
        "--keys",
        type=Path,
        default=Path("keys"),
        help="key folder: signs a final checkpoint if the latest stored one is older",
    )
    export.add_argument("--quiet", action="store_true", help="no progress bar")


def _add_audit(commands: Any) -> None:
    audit = commands.add_parser(
        "audit",
        help="replay a ledger export: roots, signatures, lease invariants (DESIGN §6)",
        epilog="Exit codes: 0 every entry proven by a checkpoint signed by a --trust key and no"
        " violation; 1 violations found (an entry no trusted checkpoint covers, or no --trust"
        " given, is one); 2 bad usage or unreadable input.",
    )
    audit.add_argument("file", type=Path, help="a `tenure export` file")
    audit.add_argument(
        "--trust",
        action="append",
        metavar="DID",
        help="the log's did:key (GET /api/v1/keys); without one the audit cannot pass",
    )
    audit.add_argument(
        "--origin",
        help="the log's checkpoint origin (GET /api/v1/log/checkpoint, first line): an export"
        " of another log is a violation",
    )
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument("--quiet", action="store_true", help="no progress bar")
    add_witness_options(audit)


def refuse(message: str) -> int:
    print(f"tenure: {message}", file=sys.stderr)
    return 2


def missing_ledger(args: argparse.Namespace) -> int | None:
    """Exit 2 if the ledger (``--data`` folder or ``--database``) does not exist yet, 1 if the
    database cannot be reached; None when it is there."""
    from ledger.backends import storage_exists
    from ledger.storage import StorageError

    try:
        found = storage_exists(ledger_location(args))
    except StorageError as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    return None if found else refuse(NO_LEDGER.format(ledger_name(args)))


def apikey_main(args: argparse.Namespace) -> int:
    """``tenure apikey create|list|rotate|revoke`` (``api/apikey_cli.py``)."""
    return apikey_cli.main(args)


def keys_main(args: argparse.Namespace) -> int:
    """``tenure keys show|rotate`` on an existing key folder: exit 2 if a key file is unusable,
    1 if the new key cannot be written (then no new key file is left behind)."""
    from ledger.files import WriteFailed
    from ledger.keys.keyring import KeyFileError, create_signing_key, load_signing_keys

    try:
        keys = load_signing_keys(args.keys) if args.keys.is_dir() else []
    except (OSError, KeyFileError) as error:
        return refuse(str(error))
    if not keys:
        return refuse(f"no signing key in {args.keys} (`tenure serve --keys` creates the first)")
    if args.action == "rotate":
        now = time.time_ns() // 1_000_000
        try:
            keys.append(create_signing_key(args.keys, max(now, keys[-1].created_at + 1)))
        except WriteFailed as error:
            print(f"tenure: not rotated: {error}", file=sys.stderr)
            return 1
        print(
            "rotated: a running `tenure serve` on this folder signs with the new key within a"
            " second (at once on SIGHUP); old receipts and checkpoints keep verifying",
            file=sys.stderr,
        )
    active = keys[-1]
    print(f"did: {active.did}")
    print(f"publicKeyMultibase: {active.multikey}")
    print(f"file: {active.path}")
    print(f"keys in folder: {len(keys)}")
    return 0


def export_main(args: argparse.Namespace) -> int:
    """``tenure export``: the whole ledger as JSON Lines, with a bar on a terminal; the file
    appears whole or not at all (exit 1 naming it)."""
    from ledger.backends import open_for_reading
    from ledger.files import WriteFailed
    from ledger.keys.keyring import KeyFileError
    from ledger.log.tile_export import FolderConflict
    from ledger.storage import StorageError

    if args.out is None and args.tiles is None:
        return refuse("tenure export needs --out FILE, --tiles DIR or both")
    problem = missing_ledger(args)
    if problem is not None:
        return problem
    started = time.monotonic()
    try:
        storage = open_for_reading(ledger_location(args))
    except StorageError as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    try:
        count = _export_tiles(storage, args) if args.tiles is not None else 0
        count = _export(storage, args) if args.out is not None else count
    except WriteFailed as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    except (KeyFileError, FolderConflict) as error:
        return refuse(str(error))
    finally:
        storage.close()
    seconds = time.monotonic() - started
    where = " and ".join(str(path) for path in (args.out, args.tiles) if path is not None)
    print(f"exported {count} entries to {where} in {seconds:.1f} s", file=sys.stderr)
    return 0


def _export(storage: Any, args: argparse.Namespace) -> int:
    """Write the export file, signed to its end with the folder's key where it has the log's."""
    from ledger.files import writing_text
    from ledger.location import HOST_NAME_VARIABLE
    from ledger.log.export import export_ledger

    key = _log_key(storage, args.keys)
    if key is None:
        print(
            f"tenure: warning: no signing key in {args.keys} (--keys): entries after the"
            " latest stored checkpoint stay unproven, and `tenure audit` fails on them",
            file=sys.stderr,
        )
    signer = None if key is None else (key, time.time_ns() // 1_000_000)
    host = os.environ.get(HOST_NAME_VARIABLE)  # as `tenure serve` reads it
    bar = Progress("exporting", storage.tree_size(), args.quiet)
    try:
        with writing_text(args.out) as out:
            return export_ledger(storage, out, bar.update, signer=signer, host_name=host)
    finally:
        bar.close()


def _export_tiles(storage: Any, args: argparse.Namespace) -> int:
    """The log as static tlog-tiles files in ``--tiles`` (ledger/log/tile_export.py)."""
    from ledger.location import HOST_NAME_VARIABLE
    from ledger.log.tile_export import export_tiles

    host = os.environ.get(HOST_NAME_VARIABLE)
    return export_tiles(storage, args.tiles, _log_key(storage, args.keys), host)


def _log_key(storage: Any, keys_dir: Path) -> Any:
    """The folder's key the log signs with now (its recorded key with no validUntil), or None.
    The export signs its final checkpoint with it."""
    from ledger.keys.keyring import load_signing_keys

    keys = load_signing_keys(keys_dir) if keys_dir.is_dir() else []
    active = {key.did for key in storage.signing_keys() if key.valid_until is None}
    return next((key for key in reversed(keys) if key.did in active), None)


def audit_main(args: argparse.Namespace) -> int:
    """``tenure audit``. Only the base install on this path: no FastAPI, no SQLite."""
    import json

    from verify.audit import audit, parse_lines
    from verify.audit_witness import Witnessed
    from verify.errors import MalformedInput

    try:
        witnessed = Witnessed.of(args)
    except MalformedInput as e:
        return refuse(str(e))
    bar = Progress("auditing", 0, args.quiet)
    try:
        with args.file.open("rb") as lines:
            records = _sized(parse_lines(lines), bar)
            fed = records if witnessed is None else witnessed.feed(records)
            report = audit(fed, args.trust, bar.update)
    except (OSError, MalformedInput) as e:
        bar.close()
        return refuse(f"{args.file}: {e}")
    bar.close()
    _pin_origin(report, args.origin)
    if witnessed is not None:
        witnessed.check(report)
    if args.json:
        print(json.dumps(report.as_data(), indent=2))
        return 0 if report.ok else 1
    for line in [*report.violations, *(f"warning: {w}" for w in report.warnings)]:
        print(line)
    verdict = "OK" if report.ok else f"{len(report.violations)} violations"
    if report.witnesses is not None:
        print(f"witnessed checkpoint: {report.witnesses}")
    print(
        f"{report.entries} entries, {report.checkpoints_verified}/{report.checkpoints}"
        f" checkpoints verified, {report.keys} keys: {verdict}"
    )
    if not report.trusted:
        print(
            "tenure: no trusted key: pass --trust did:key:… (from GET /api/v1/keys);"
            " the export's own keys prove consistency, not origin",
            file=sys.stderr,
        )
    return 0 if report.ok else 1


def _pin_origin(report: Any, origin: str | None) -> None:
    """Every verified checkpoint names the header's origin, so pinning it pins them all."""
    from verify.audit_report import Violation

    if origin is not None and report.origin != origin:
        found = f"the export is of {report.origin!r}, not the pinned {origin!r}"
        report.violations.append(Violation(None, "origin", found))


def _sized(records: Any, bar: Progress) -> Any:
    """Pass the records through, taking the bar's total from the header's treeSize."""
    for record in records:
        if bar.total == 0 and isinstance(record, dict):
            size = record.get("treeSize")
            bar.total = size if isinstance(size, int) and not isinstance(size, bool) else 0
        yield record
