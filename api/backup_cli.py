"""`tenure backup DEST`, `tenure restore SRC` and `tenure fence-floor`: a SQLite ledger folder
copied online and verified, a verified copy put back in place of a lost one with a fencing floor
above every token the lost log handed out, and that floor raised on a ledger restored by other
means (pg_restore) — docs/operations.md "Backup and restore", docs/decisions/0033 and 0040.

Both copies use SQLite's backup API and audit the copy against the keys folder before it appears
under its name (``ledger/sqlite/backup.py``). Exit codes: 0 copied and verified; 1 the copy
could not be taken or did not audit (nothing is left at the destination); 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.database_option import add_database_option, ledger_location, ledger_name

if TYPE_CHECKING:
    from ledger.fencing_floor import Floor

EPILOG = (
    "Exit codes: 0 copied and verified; 1 the copy could not be taken or did not audit (nothing"
    " is left at the destination); 2 bad usage."
)
LOG_SIZE_HELP = (
    "the size the lost log had reached: the largest tree size anyone saw (a monitor's state, a"
    " witness, a checkpoint or receipt a client kept); every token granted from now on is above"
    " those it can have handed out"
)
NEED_LOG_SIZE = (
    "--log-size: a restore needs the size the lost log had reached, so that every fencing token"
    " the restored ledger grants is above the tokens handed out after the backup. Give the"
    " largest tree size anyone saw: `tenure monitor`'s state file, a witness's or a client's"
    " latest checkpoint (treeSize), a saved receipt's ledger logIndex + 1. For a copy of a"
    " ledger that served nothing after it, give the copy's own size."
)


def add_parsers(commands: Any) -> None:
    """Add ``backup``, ``restore`` and ``fence-floor`` to the ``tenure`` subcommands."""
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
    restore.add_argument("--log-size", type=_size, metavar="S", help=LOG_SIZE_HELP)
    floor = commands.add_parser(
        "fence-floor",
        help="grant every fencing token above those a lost log handed out (after pg_restore)",
        epilog="Exit codes: 0 the floor is set; 1 the ledger could not be written; 2 bad usage.",
    )
    _common(floor, "the ledger folder (no server on it)", "the keys folder `tenure serve` used")
    add_database_option(floor)
    floor.add_argument("--log-size", type=_size, metavar="S", required=True, help=LOG_SIZE_HELP)


def _common(
    command: argparse.ArgumentParser,
    data_help: str,
    keys_help: str = "the key folder the copy is checked with",
) -> None:
    command.add_argument("--data", type=Path, default=Path("data"), help=data_help)
    command.add_argument("--keys", type=Path, default=Path("keys"), help=keys_help)


def _size(value: str) -> int:
    """argparse type: a log size, an integer ≥ 0."""
    if not value.isdigit():
        raise argparse.ArgumentTypeError("must be a whole number of entries (0 or more)")
    return int(value)


def backup_main(args: argparse.Namespace) -> int:
    """``tenure backup DEST --data DIR``."""
    from ledger.backends import storage_exists

    if not storage_exists(args.data):
        return _refuse(f"--data: no ledger in {args.data}")
    if _occupied(args.dest):
        return _refuse(f"DEST {args.dest} exists: name a new folder")
    return _copy(args.data, args.dest, args.keys, "backed up")


def restore_main(args: argparse.Namespace) -> int:
    """``tenure restore SRC --data DIR --log-size S``: the copy, its fencing floor raised
    before it appears."""
    from ledger.backends import served, storage_exists

    if args.log_size is None:
        return _refuse(NEED_LOG_SIZE)
    if not args.src.is_dir() or not storage_exists(args.src):
        return _refuse(f"SRC: no ledger copy in {args.src}")
    if args.data.exists() and served(args.data):
        return _refuse(f"--data: a running server serves {args.data}: stop it first")
    if _occupied(args.data):
        return _refuse(f"--data: {args.data} is not empty: restore into a new or empty folder")
    return _copy(args.src, args.data, args.keys, "restored", args.log_size)


def fence_floor_main(args: argparse.Namespace) -> int:
    """``tenure fence-floor --log-size S (--data DIR | --database URL)``."""
    from ledger.backends import served, storage_exists
    from ledger.fencing_floor import FloorRefused
    from ledger.storage import StorageError

    location = ledger_location(args)
    if not storage_exists(location):
        return _refuse(f"no ledger in {ledger_name(args)}")
    if args.database is None and served(args.data):
        return _refuse(f"--data: a running server serves {args.data}: stop it first")
    try:
        floor = _raise_floor(location, args.keys, args.log_size)
    except FloorRefused as error:
        return _refuse(str(error))
    except StorageError as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    print(_floor_said(floor), file=sys.stderr)
    return 0


def _copy(source: Path, dest: Path, keys: Path, done: str, log_size: int | None = None) -> int:
    from ledger.backends import copy_ledger
    from ledger.fencing_floor import FloorRefused
    from ledger.storage import StorageError

    floors: list[Floor] = []

    def fence(folder: Path) -> None:
        if log_size is not None:
            floors.append(_raise_floor(folder, keys, log_size))

    started = time.monotonic()
    try:
        entries = copy_ledger(source, dest, keys, fence)
    except FloorRefused as error:
        return _refuse(str(error))
    except (StorageError, OSError) as error:
        print(f"tenure: {error}", file=sys.stderr)
        return 1
    seconds = time.monotonic() - started
    print(f"{done} {entries} entries to {dest}, audited, in {seconds:.1f} s", file=sys.stderr)
    for floor in floors:
        print(_floor_said(floor), file=sys.stderr)
    return 0


def _raise_floor(location: Path | str, keys: Path, log_size: int) -> Floor:
    """The ledger's fencing floor raised for a lost log of ``log_size`` entries."""
    from ledger.backends import open_storage
    from ledger.fencing_floor import FloorRefused, raise_floor
    from ledger.keys.keyring import NAMES_KEY, load_or_create_names_key
    from ledger.keys.names import NameCodec

    if not (keys / NAMES_KEY).is_file():  # never create one here: the ledger's is elsewhere
        raise FloorRefused(f"--keys: no {NAMES_KEY} in {keys} (the keys `tenure serve` used)")
    storage = open_storage(location, names=NameCodec(load_or_create_names_key(keys)))
    try:
        return raise_floor(storage, log_size)
    finally:
        storage.close()


def _floor_said(floor: Floor) -> str:
    return (
        f"fencing floor {floor.floor}: every fencing token granted from now on is above it"
        f" (the ledger holds {floor.entries} entries; highest token before: {floor.highest})"
    )


def _occupied(path: Path) -> bool:
    """Whether ``path`` is a file, or a folder with anything in it."""
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def _refuse(message: str) -> int:
    print(f"tenure: {message}", file=sys.stderr)
    return 2
