"""Benchmark the persistent RFC 9162 tree (ledger/log/merkle.py) over a real SQLite file.

Not a test: prints figures. Appends ``--size`` synthetic ledger entries, persisting every new
perfect node in ``tree_nodes`` (executemany per append, one commit per >= 1000 rows), reports
the append cost per event around 1k, 100k and 1M entries, then times root_at, inclusion_proof
and consistency_proof at the final size, cold (first call on a fresh connection) and warm
(median of repeated calls).

    .venv/bin/python bench/merkle_bench.py [--size N]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ledger.log.merkle import CompactRange, consistency_proof, inclusion_proof, root_at
from verify.rfc9162 import leaf_hash, verify_consistency, verify_inclusion

SCHEMA = (
    "CREATE TABLE tree_nodes(level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,"
    " PRIMARY KEY(level, idx)) WITHOUT ROWID"
)
INSERT = "INSERT INTO tree_nodes(level, idx, hash) VALUES (?, ?, ?)"
SELECT = "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?"
COMMIT_ROWS = 1000
WINDOW = 1000  # appends averaged for each "around N" figure
MARKS = (1_000, 100_000, 1_000_000)
Getter = Callable[[int, int], bytes]


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level="DEFERRED")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # the ledger's durability setting (DESIGN §4)
    return conn


def getter(conn: sqlite3.Connection, counter: list[int]) -> Getter:
    def get(level: int, idx: int) -> bytes:
        counter[0] += 1
        row = conn.execute(SELECT, (level, idx)).fetchone()
        if row is None:
            raise KeyError((level, idx))
        return bytes(row[0])

    return get


def entry(i: int) -> bytes:
    # Roughly the size of a JCS ledger entry; the content does not matter for the tree.
    return b'{"holder":"h%012d","index":%d,"kind":"acquire","v":1}' % (i, i) + b"x" * 120


def build(conn: sqlite3.Connection, size: int) -> tuple[CompactRange, dict[int, float]]:
    """Append ``size`` entries; return the tree and the mean µs/append of each window."""
    marks = sorted({m for m in MARKS if m <= size} | {size})
    starts = {m: max(0, m - WINDOW) for m in marks}
    boundaries = set(marks) | set(starts.values())
    tree, pending, stamps = CompactRange.empty(), 0, {0: time.perf_counter()}
    for i in range(size):
        nodes = tree.append(leaf_hash(entry(i)))
        conn.executemany(INSERT, nodes)
        pending += len(nodes)
        if pending >= COMMIT_ROWS:
            conn.commit()
            pending = 0
        if i + 1 in boundaries:
            stamps[i + 1] = time.perf_counter()
    conn.commit()
    per_event = {m: (stamps[m] - stamps[b]) / (m - b) * 1e6 for m, b in starts.items()}
    return tree, per_event


def time_us(call: Callable[[Getter], object], get: Getter) -> float:
    t = time.perf_counter()
    call(get)
    return (time.perf_counter() - t) * 1e6


def calls(size: int, rng: random.Random) -> dict[str, Callable[[Getter], object]]:
    first = rng.randrange(1, size) if size > 1 else 1
    index = rng.randrange(size)
    return {
        "root_at": lambda g: root_at(size, g),
        "inclusion_proof": lambda g: inclusion_proof(index, size, g),
        "consistency_proof": lambda g: consistency_proof(first, size, g),
    }


def measure(path: Path, size: int, name: str, cold_runs: int, warm_runs: int) -> str:
    rng = random.Random(name)
    cold, reads = [], [0]
    for _ in range(cold_runs):
        conn = connect(path)  # fresh connection: empty SQLite page cache (the OS cache stays)
        call = calls(size, rng)[name]
        cold.append(time_us(call, getter(conn, reads)))
        conn.close()
    conn = connect(path)
    warm, reads = [], [0]
    get = getter(conn, reads)
    for _ in range(warm_runs):
        call = calls(size, rng)[name]
        warm.append(time_us(call, get))
    conn.close()
    return (
        f"  {name:<18} cold {statistics.median(cold):9.1f} µs   "
        f"warm {statistics.median(warm):7.1f} µs   ({reads[0] / warm_runs:.1f} node reads/call)"
    )


def check(conn: sqlite3.Connection, tree: CompactRange) -> None:
    """Sanity: the stored tree agrees with the in-memory frontier, and its proofs verify."""
    size, get = tree.size, getter(conn, [0])
    assert root_at(size, get) == tree.root()
    assert CompactRange.load(size, get) == tree
    index = size // 3
    root = tree.root()
    verify_inclusion(index, size, leaf_hash(entry(index)), inclusion_proof(index, size, get), root)
    if size > 1:
        first = size // 2 + 1 if size > 2 else 1
        proof = consistency_proof(first, size, get)
        verify_consistency(first, size, root_at(first, get), root, proof)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="entries (default 1000000)")
    parser.add_argument("--warm-runs", type=int, default=2000)
    parser.add_argument("--cold-runs", type=int, default=25)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite"
        conn = connect(path)
        conn.execute(SCHEMA)
        print(f"SQLite file {path}: journal_mode=WAL, synchronous=FULL,")
        print(
            f"  each append's nodes inserted with executemany, commit every >= {COMMIT_ROWS} rows"
        )
        print("  (append = leaf hash + CompactRange.append + insert; commits amortized)")
        t = time.perf_counter()
        tree, per_event = build(conn, args.size)
        print(f"built {args.size:,} entries in {time.perf_counter() - t:.1f} s")
        for mark, us in per_event.items():
            window = min(WINDOW, mark)
            print(f"  append around {mark:>9,} entries: {us:6.1f} µs/event (mean of last {window})")
        rows = conn.execute("SELECT count(*) FROM tree_nodes").fetchone()[0]
        wal = path.with_name(path.name + "-wal")
        mb = (path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)) / 1e6
        print(f"  tree_nodes rows: {rows:,}; database + WAL {mb:.1f} MB")
        check(conn, tree)
        conn.close()
        print(f"queries at size {args.size:,}: cold = median of {args.cold_runs} first calls on a")
        print(f"  fresh connection each; warm = median of {args.warm_runs} calls, random arguments")
        for name in ("root_at", "inclusion_proof", "consistency_proof"):
            print(measure(path, args.size, name, args.cold_runs, args.warm_runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
