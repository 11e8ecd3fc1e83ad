"""A ledger folder this process cannot write (an auditor's read-only backup), opened read-only.

Nothing is created, migrated or chmod-ed. SQLite in WAL mode needs to write its shared-memory
file even to read, so a copy without a WAL to merge is opened ``immutable`` (no locks, no
shared memory: nothing can change it), and one with a WAL read through it where SQLite can.
Serves what the reading commands ask: ``tenure export`` and ``tenure apikey list``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ledger.sqlite.backend import SQLiteSnapshot
from ledger.sqlite.reads import LoopReads
from ledger.sqlite.schema import DB_NAME
from ledger.storage import StorageError

__all__ = ["ReadOnlyLedger", "writable"]


def writable(folder: Path) -> bool:
    """Whether this process may write the folder and its database (root on a read-only mount
    may not; ``os.access`` asks the kernel, which knows both)."""
    database = folder / DB_NAME
    return os.access(folder, os.W_OK) and os.access(database, os.W_OK)


class ReadOnlyLedger(LoopReads):
    """The loop's reads of ``Storage`` (an export and a key listing need a few), over a read-only
    file."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, data_dir: Path) -> ReadOnlyLedger:
        """StorageError saying why if the copy cannot be read."""
        path = data_dir / DB_NAME
        wal = path.with_name(DB_NAME + "-wal")
        merged = not wal.exists() or wal.stat().st_size == 0
        options = "mode=ro&immutable=1" if merged else "mode=ro"
        uri = f"file:{quote(str(path.resolve()))}?{options}"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("SELECT max(idx) FROM entries").fetchone()
        except sqlite3.Error as error:
            hint = "" if merged else " (its WAL is not merged: copy it from a stopped server)"
            raise StorageError(f"cannot read the ledger in {data_dir}: {error}{hint}") from error
        return cls(conn)

    def _reading(self) -> sqlite3.Connection:
        return self._conn

    @contextmanager
    def export_snapshot(self) -> Iterator[SQLiteSnapshot]:
        self._conn.execute("BEGIN")
        try:
            yield SQLiteSnapshot(self._conn)
        finally:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()
