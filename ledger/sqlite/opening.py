"""Opening the ledger's SQLite file: created private to its owner, then migrated."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from ledger.keys.names import NameCodec
from ledger.sqlite.cluster import serving
from ledger.sqlite.migrations import migrate
from ledger.sqlite.readahead import warm_at_random
from ledger.sqlite.schema import DB_NAME, connect


def open_db(data_dir: Path, names: NameCodec | None) -> tuple[sqlite3.Connection, int]:
    """Open (creating if needed) the ledger, private to its owner: the folder 0700, the database
    and its WAL and shared-memory files 0600; the schema version reached is returned. A WAL left
    by a crash is read through first with readahead off: SQLite replays it in its first
    statement, before its descriptor can be advised, and the writers then rewrite those pages
    (``ledger/sqlite/readahead.py``). Safe to close: SQLite holds no lock on the WAL file."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    path = data_dir / DB_NAME
    _create_private(path)
    with contextlib.suppress(FileNotFoundError):  # a WAL a crash left, replayed by the open
        warm_at_random(data_dir / (DB_NAME + "-wal"))
    conn = connect(path)
    version = migrate(conn, names, lambda: serving(data_dir))
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(data_dir / name, 0o600)
    return conn, version


def _create_private(path: Path) -> None:
    """Create the database file 0600 if it is missing, and never open an existing one.

    SQLite's locks are POSIX record locks, which a process loses on *every* descriptor of the
    file the moment it closes *any* one of them: opening and closing the file beside a live
    connection (a key rotation's second handle, an admin CLI) would drop them, and the next
    process to close would take itself for the last, checkpoint and delete the WAL under the
    running server. ``O_EXCL`` only ever opens a file that no connection can hold yet.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
