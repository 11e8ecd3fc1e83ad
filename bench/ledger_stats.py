"""What a running tenure's SQLite ledger holds and how big it is on disk: shared by the benches.

Not a test. Reads the ledger file beside a running server through a read-only connection of its
own (another process: the server's locks are untouched): the entry count (the tree's size, as
``ledger/sqlite/reads.py`` counts it), the sizes of ``tenure.db`` and its WAL, the tree node count
and, where SQLite was built with ``dbstat`` (Debian's and CPython's are), each table's and index's
size. It imports nothing of tenure's, so it reads a ledger of another revision the same way.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

DB_NAME = "tenure.db"
MB = 1024 * 1024


@contextlib.contextmanager
def _reader(data: Path) -> Iterator[sqlite3.Connection]:
    uri = f"file:{quote(str((data / DB_NAME).resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
    try:
        yield conn
    finally:
        conn.close()


def entries(data: Path) -> int:
    """How many entries the ledger in ``data`` holds (0 before the server made it)."""
    if not (data / DB_NAME).exists():
        return 0
    with _reader(data) as conn:
        return _tree_size(conn)


def _tree_size(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(idx) FROM entries").fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


@dataclass
class Sizes:
    """What grows with the ledger, at one moment."""

    entries: int
    db_bytes: int
    wal_bytes: int
    nodes: int
    objects: dict[str, int] = field(default_factory=dict)
    """Bytes per table and index (``dbstat``), largest first; empty where it is missing."""

    def lines(self) -> list[str]:
        head = (
            f"ledger: {self.entries:,} entries, {self.nodes:,} tree nodes,"
            f" tenure.db {self.db_bytes / MB:,.1f} MB ({self.db_bytes / max(1, self.entries):,.0f}"
            f" B/entry), WAL {self.wal_bytes / MB:,.1f} MB"
        )
        parts = [f"{name} {size / MB:,.1f}" for name, size in self.objects.items() if size >= MB]
        return [head] + (["  MB by table/index: " + ", ".join(parts)] if parts else [])


def sizes(data: Path) -> Sizes:
    """The ledger's :class:`Sizes` now (a full ``dbstat`` scan: seconds on a large file)."""
    db = data / DB_NAME
    wal = db.with_name(DB_NAME + "-wal")
    with _reader(data) as conn:
        count = _tree_size(conn)
        nodes = int(conn.execute("SELECT count(*) FROM tree_nodes").fetchone()[0])
        try:
            rows = conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ).fetchall()
        except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
            rows = []
    return Sizes(
        count,
        db.stat().st_size,
        wal.stat().st_size if wal.exists() else 0,
        nodes,
        {str(name): int(size) for name, size in rows},
    )
