"""`tenure backup DEST` and `tenure restore SRC`: a SQLite ledger folder copied online and
verified, and a verified copy put back in place of a lost one (docs/operations.md "Backup and
restore"). PostgreSQL ledgers are backed up with pg_dump or PITR (docs/postgres.md).

Both copy with SQLite's backup API and audit the copy against the keys folder before it appears
under its name (``ledger/sqlite/backup.py``). Exit codes: 0 copied and verified; 1 the copy could
not be taken or did not audit (nothing is left at the destination); 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

EPILOG = (
    "Exit codes: 0 copied and verified; 1 the copy could not be taken or did not audit (nothing"
    " is left at the destination); 2 bad usage."
)


def add_parsers(commands: Any) -> None:
    """Add ``backup`` and ``restore`` to the ``tenure`` subcommands."""
    backup = commands.add_parser(
        "backup", help="copy a running SQLite ledger, verified", epilog=EPILOG
    )
    backup.add_argument("dest", type=Path, metavar="DEST", help="new folder for the copy")
    _common(backup, "the ledger folder to copy (a server may be serving it)")
    restore = commands.add_parser(
        "restore", help="put a verified copy in place as a ledger folder", epilog=EPILOG
    )
    restore.add_argument("src", type=Path, metavar="SRC", help="a folder `tenure backup` wrote")
    _common(restore, "the ledger folder to create (absent or empty; no server on it)")


def _common(command: argparse.ArgumentParser, data_help: str) -> None:
    command.add_argument("--data", type=Path, default=Path("data"), help=data_help)
    command.add_argument(
        "--keys", type=Path, default=Path("keys"), help="the key folder the copy is checked with"
    )


def backup_main(args: argparse.Namespace) -> int:
    """``tenure backup DEST --data DIR``."""
    from ledger.backends import storage_exists

    if not storage_exists(args.data):
        return _refuse(f"--data: no ledger in {args.data}")
    if _occupied(args.dest):
        return _refuse(f"DEST {args.dest} exists: name a new folder")
    return _copy(args.data, args.dest, args.keys, "backed up")


def restore_main(args: argparse.Namespace) -> int:
    """``tenure restore SRC --data DIR``."""
    from ledger.backends import served, storage_exists

    if not args.src.is_dir() or not storage_exists(args.src):
        return _refuse(f"SRC: no ledger copy in {args.src}")
    if args.data.exists() and served(args.data):
        return _refuse(f"--data: a running server serves {args.data}: stop it first")
    if _occupied(args.data):
        return _refuse(f"--data: {args.data} is not empty: restore into a new or empty folder")
    return _copy(args.src, args.data, args.keys, "restored")


def _copy(source: Path, dest: Path, keys: Path, done: str) -> int:
    from ledger.backends import copy_ledger
    from ledger.storage import StorageError

    started = time.monotonic()
    try:
        entries = copy_ledger(source, dest, keys)
    except (StorageError, OSError) as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    seconds = time.monotonic() - started
    print(f"{done} {entries} entries to {dest}, audited, in {seconds:.1f} s", file=sys.stderr)
    return 0


def _occupied(path: Path) -> bool:
    """Whether ``path`` is a file, or a folder with anything in it."""
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def _refuse(message: str) -> int:
    print(f"tenure: {message}", file=sys.stderr)
    return 2
