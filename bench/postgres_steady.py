"""PostgreSQL at steady state: ``bench/vs_etcd.py``'s wrk load on one or more nodes, in rounds.

Not a test: prints figures. The nodes (the default ``tenure serve --database URL``, one
database) start once and stay warm; wrk takes ``--connections`` split between them, each request
an acquire of a fresh name for ``--ttl`` seconds (so from the second round on, leases expire as
fast as they are granted); ``--fill`` entries are appended first. Each round prints the rate,
p99, tenure's and PostgreSQL's CPU per acquire, and each node's group commits. Method and
figures: docs/performance.md.

    .venv/bin/python bench/postgres_steady.py [--nodes 2] [--rounds 5] [--fill 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import own_postgres
import psycopg
import server_figures
from lease_bench import cpu_seconds, free_port, wait_ready
from vs_etcd import Figures, parse_wrk
from wrk_lua import LUA_TENURE

if TYPE_CHECKING:
    from tests.postgres import PostgresServer

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Node:
    process: subprocess.Popen[bytes]
    url: str


def start(args: argparse.Namespace, url: str, scratch: Path) -> list[Node]:
    """``--nodes`` servers on the database at ``url``, sharing one keys folder."""
    nodes = []
    for node in range(args.nodes):
        port = free_port()
        cmd = [sys.executable, "-m", "api", "serve", "--port", str(port), "--database", url]
        cmd += ["--keys", str(scratch / "keys"), "--workers", str(args.workers)]
        with (scratch / f"node{node}.log").open("ab") as log:
            process = subprocess.Popen(cmd, cwd=args.checkout, stdout=log, stderr=log)
        nodes.append(Node(process, f"http://127.0.0.1:{port}"))
        wait_ready(nodes[-1].url, process)
    return nodes


def api_key(args: argparse.Namespace, url: str) -> str:
    made = subprocess.run(
        [sys.executable, "-m", "api", "apikey", "create", "bench", "--database", url],
        cwd=args.checkout, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return next(word for word in made.stdout.split() if word.startswith("tnr_"))


def drive(args: argparse.Namespace, urls: list[str], key: str, run: int, seconds: float) -> Figures:
    """wrk on every node at once; the rates summed, the worst p99."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA_TENURE)
    share = max(1, args.connections // len(urls))
    runs = []
    for node, url in enumerate(urls):  # a nonce per node and round: every name is fresh
        env = os.environ | {"KEY": key, "TTL": str(args.ttl), "RUN": str(run * 64 + node)}
        cmd = [
            "wrk",
            "-t",
            str(max(1, 2 // len(urls))),
            "-c",
            str(share),
            "-d",
            f"{round(seconds)}s",
        ]
        runs.append(subprocess.Popen([*cmd, "--latency", "-s", script.name, url], env=env,
                                     stdout=subprocess.PIPE, text=True))  # fmt: skip
    parsed = [parse_wrk("tenure", wrk.communicate()[0]) for wrk in runs]
    os.unlink(script.name)
    return Figures(
        "tenure",
        sum(f.rate for f in parsed),
        max(f.p99_ms for f in parsed),
        sum(f.requests for f in parsed),
        sum(f.non_2xx for f in parsed),
        "; ".join(f.errors for f in parsed if f.errors),
    )


def entries(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT coalesce(max(idx) + 1, 0) FROM entries").fetchone()
    return int(row[0]) if row else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="auto", help="postgresql:// URL; auto: own")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="`serve --workers` per node")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per round")
    parser.add_argument("--connections", type=int, default=64, help="in all, split by node")
    parser.add_argument("--ttl", type=int, default=5, help="lease seconds")
    parser.add_argument("--fill", type=int, default=0, help="ledger entries before the rounds")
    parser.add_argument("--checkout", default=str(ROOT), help="serve from this tree (A/B)")
    args = parser.parse_args()
    server, url = own_postgres.start() if args.database == "auto" else (None, args.database)
    scratch = Path(tempfile.mkdtemp(prefix="tenure-pg-steady-"))
    nodes = start(args, url, scratch)
    urls = [node.url for node in nodes]
    print(f"PostgreSQL steady: {args.nodes} node(s) × {args.workers} worker(s) from "
          f"{args.checkout}, {args.connections} connections, ttl {args.ttl} s")  # fmt: skip
    try:
        key = api_key(args, url)
        while entries(url) < args.fill:
            drive(args, urls, key, 9999 + entries(url), 10)
        rates = [one_round(args, server, nodes, key, n) for n in range(args.rounds)]
        low, high, size = min(rates), max(rates), entries(url)
        print(f"median {statistics.median(rates):,.0f} acquires/s over {len(rates)} rounds "
              f"(min {low:,.0f}, max {high:,.0f}); ledger {size:,} entries")  # fmt: skip
    finally:
        for node in nodes:
            node.process.terminate()
            node.process.wait(timeout=30)
        if server is not None:
            server.stop()
    return 0


def one_round(
    args: argparse.Namespace,
    server: PostgresServer | None,
    nodes: list[Node],
    key: str,
    n: int,
) -> float:
    """One measured round: its figures printed, its rate returned."""
    urls = [node.url for node in nodes]
    scraped = [server_figures.scrape(url) for url in urls]
    tenure0 = sum(cpu_seconds(node.process.pid) or 0.0 for node in nodes)
    db0 = own_postgres.cpu_seconds(server) if server else None
    fig = drive(args, urls, key, n, args.duration)
    tenure = sum(cpu_seconds(node.process.pid) or 0.0 for node in nodes) - tenure0
    db = (own_postgres.cpu_seconds(server) or 0.0) - db0 if server and db0 is not None else None
    per = max(1, fig.requests)
    line = f"round {n}: {fig.rate:,.0f} acquires/s  p99 {fig.p99_ms:.1f} ms  "
    line += f"tenure CPU {tenure / per * 1e6:,.0f} µs/acquire"
    if db is not None:
        line += f"  PostgreSQL CPU {db / per * 1e6:,.0f} µs/acquire"
    if fig.non_2xx or fig.errors:
        line += f"  ({fig.non_2xx} non-2xx {fig.errors})"
    print(line, flush=True)
    for node, (url, before) in enumerate(zip(urls, scraped, strict=True)):
        figures = server_figures.group_figures(before, server_figures.scrape(url))
        print(f"  node {node}: {figures.line(args.duration)}")
    return fig.rate


if __name__ == "__main__":
    sys.exit(main())
