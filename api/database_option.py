"""The `--database URL` option of `tenure serve`, `export` and `apikey create` (docs/postgres.md).

A ``postgresql://`` URL (or the environment's ``TENURE_DATABASE``) puts the ledger in that
PostgreSQL database; without one, ``--data DIR`` keeps meaning the SQLite folder.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_database_option(command: argparse.ArgumentParser) -> None:
    """Add ``--database URL``, defaulting to ``TENURE_DATABASE``."""
    command.add_argument(
        "--database",
        type=_database_url,
        default=os.environ.get("TENURE_DATABASE") or None,
        metavar="URL",
        help="a postgresql:// URL (env TENURE_DATABASE): the ledger is there instead of --data",
    )


def _database_url(value: str) -> str:
    """argparse type: a PostgreSQL URL, or a usage error naming the rule."""
    from ledger.location import is_database_url

    if not is_database_url(value):
        raise argparse.ArgumentTypeError("must be a postgresql:// URL")
    return value


def ledger_location(args: argparse.Namespace) -> Path | str:
    """Where the command's ledger is: the --database URL if given, else the --data folder."""
    location: Path | str = args.database or args.data
    return location


def ledger_name(args: argparse.Namespace) -> str:
    """The ledger's location as messages may show it (a URL without its password)."""
    if args.database is None:
        return str(args.data)
    from ledger.location import redact

    return redact(args.database)
