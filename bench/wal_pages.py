"""WAL frames per fresh grant: today's two state B-trees against one that interleaves them.

Not a test: prints figures. A bare SQLite file (WAL, ``synchronous=FULL``, no automatic
checkpoint) written as the writer writes fresh acquires, with stand-in rows of the real sizes;
the frames per event are counted from RESTART checkpoints. ``--layout one`` keeps resources and
leases in one WITHOUT ROWID table so a grant's two rows share a leaf page (decisions/0013). What
each row and index is, and the result: docs/performance.md, seventh round.

    .venv/bin/python bench/wal_pages.py [--events 20000] [--group 26]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

TWO = (
    "CREATE TABLE resources(tenant BLOB, name BLOB, sealed BLOB, capacity INTEGER,"
    " max_token INTEGER, PRIMARY KEY(tenant, name)) WITHOUT ROWID",
    "CREATE TABLE leases(tenant BLOB, resource BLOB, token INTEGER, sealed BLOB, owner BLOB,"
    " expires_at INTEGER, lease_id INTEGER, PRIMARY KEY(tenant, resource, token)) WITHOUT ROWID",
    "CREATE INDEX leases_expires_at ON leases(expires_at)",
)
ONE = (
    "CREATE TABLE state(tenant BLOB, name BLOB, token INTEGER, sealed BLOB, a INTEGER,"
    " owner BLOB, PRIMARY KEY(tenant, name, token)) WITHOUT ROWID",
    "CREATE INDEX state_expires_at ON state(a) WHERE token > 0",
)


def run(layout: str, events: int, group: int) -> tuple[float, float]:
    """(WAL frames per event, ms per COMMIT) for ``events`` fresh grants in groups."""
    path = Path(tempfile.mkdtemp()) / "t.db"
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "wal_autocheckpoint=0"):
        db.execute(f"PRAGMA {pragma}")
    db.execute("CREATE TABLE entries(idx INTEGER PRIMARY KEY, body BLOB)")
    db.execute(
        "CREATE TABLE tree_nodes(level INTEGER, idx INTEGER, hash BLOB,"
        " PRIMARY KEY(level, idx)) WITHOUT ROWID"
    )
    for sql in ONE if layout == "one" else TWO:
        db.execute(sql)
    tenant, frames, committing, index = os.urandom(32), 0, 0.0, 0
    for number in range(events // group):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(group):
            index, name = index + 1, os.urandom(32)
            db.execute("INSERT INTO entries VALUES (?, ?)", (index, os.urandom(600)))
            db.execute("INSERT INTO tree_nodes VALUES (0, ?, ?)", (index, os.urandom(32)))
            if index % 2 == 0:
                db.execute("INSERT INTO tree_nodes VALUES (1, ?, ?)", (index, os.urandom(32)))
            resource = (tenant, name, os.urandom(70))  # digests, the sealed name
            lease = (tenant, name, os.urandom(60), os.urandom(32), index)  # + owner digest
            if layout == "one":
                db.execute("INSERT INTO state VALUES (?, ?, 0, ?, 1, NULL)", resource)
                db.execute(
                    "INSERT INTO state VALUES (?, ?, 1, ?, ?, ?)", (*lease[:3], index, lease[3])
                )
            else:
                db.execute("INSERT INTO resources VALUES (?, ?, ?, 1, 1)", resource)
                db.execute("INSERT INTO leases VALUES (?, ?, 1, ?, ?, ?, ?)", (*lease, index))
        started = time.perf_counter()
        db.execute("COMMIT")
        committing += time.perf_counter() - started
        if number % 40 == 39:
            frames += db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[1]
    frames += db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[1]
    db.close()
    return frames / events, committing / (events // group) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--group", type=int, default=26)
    args = parser.parse_args()
    for layout in ("two", "one", "two", "one"):
        frames, commit_ms = run(layout, args.events, args.group)
        print(f"{layout} B-tree(s): {frames:.2f} WAL frames per event, COMMIT {commit_ms:.2f} ms")


if __name__ == "__main__":
    main()
