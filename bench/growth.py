"""What an acquire costs as the ledger grows, and what grows with it.

Not a test: prints figures. One default ``tenure serve``; for each of ``--sizes`` its ledger is
filled to that many entries (``bench/steady.py``'s fill, real grants and expiries: it is the
warm-up too), then one wrk run of ``--duration`` s: acquires/s, p99, server CPU per acquire,
the lock and the sweeper's share; then what grew (``bench/ledger_stats.py``): entries, tree
nodes, ``tenure.db``, its WAL, the largest tables and indexes. At the smallest size the run adds
more entries than the ledger held: both counts are printed. ``--keep DIR`` as in steady.py.

    .venv/bin/python bench/growth.py [--sizes 1000,100000,1000000] [--ttl 5] [--duration 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ledger_stats import entries, sizes
from steady import fill, folder
from vs_etcd import Figures, interpreter, missing_tools, tenure, wrk, wrk_options
from wrk_lua import LUA_TENURE


def point(url: str, data: Path, env: dict[str, str], pid: int, args: argparse.Namespace) -> str:
    """Fill to ``args.fill``, measure one run, print it and what grew; the table row."""
    filling = time.monotonic()
    fill(url, data, env, args)
    filled = time.monotonic() - filling
    before = entries(data)
    run: Figures = wrk("tenure", url, LUA_TENURE, args, env, pid)
    after = entries(data)
    print(
        f"at {before:,} entries (→ {after:,} after the run): {run.rate:,.0f} acquires/s,"
        f" p99 {run.p99_ms:.1f} ms, server CPU {run.cpu_us:,.0f} µs/acquire"
        + (f", {run.non_2xx} non-2xx" if run.non_2xx else "")
        + f"\n        {run.detail}",
        flush=True,
    )
    grown = sizes(data)
    for line in grown.lines():
        print("        " + line, flush=True)
    return (
        f"| {before:,} | {run.rate:,.0f} | {run.p99_ms:.1f} | {run.cpu_us:,.0f}"
        f" | {run.sweeper:.0f}% | {grown.db_bytes / 2**20:,.0f}"
        f" | {grown.wal_bytes / 2**20:,.1f} | {grown.nodes:,}"
        f" | {run.idle:.0f}% | {filled:,.0f} s |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000,1000000", help="ledger entries, ascending")
    wrk_options(parser, duration=10)
    parser.add_argument("--serve-arg", action="append", default=[], help="extra `tenure serve` arg")
    parser.add_argument("--keep", type=Path, help="the server's folder, kept: a rerun tops it up")
    args = parser.parse_args()
    try:
        targets = [int(x.replace("_", "")) for x in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: comma-separated entry counts, not {args.sizes!r}")
    if args.ttl < 1 or args.duration < 1 or any(t < 1 for t in targets):
        parser.error("--ttl, --duration and every --sizes entry must be at least 1")
    if missing := missing_tools(("wrk",)):
        print("missing: " + ", ".join(missing), file=sys.stderr)
        return 2
    print(
        f"{os.cpu_count()} cores; {args.connections} connections, {args.duration} s per size,"
        f" ttl {args.ttl} s; {interpreter()}",
        flush=True,
    )
    rows = []
    with folder(args.keep) as scratch, tenure(scratch, args.serve_arg) as (url, key, pid):
        env = {"KEY": key, "TTL": str(args.ttl)}
        for target in sorted(targets):
            args.fill = target
            rows.append(point(url, scratch / "tenure-data", env, pid, args))
    print(
        "| entries | acquires/s | p99 ms | server µs/acquire | sweeper's lock share"
        " | tenure.db MB | WAL MB | tree nodes | machine idle | fill took |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
