"""Benchmark lease throughput and latency over HTTP: acquire→release cycles, N connections.

Not a test: prints figures. Starts its own ``tenure serve`` with throw-away data and keys (or,
with ``--url``, drives a running one); for each N in ``--connections``, N keep-alive connections
cycle acquire→release on resources of their own, two durable ledger entries per cycle. The client
is thin raw asyncio, since it shares the CPUs, and prints its own CPU beside the server's.
``--database postgresql://…`` with ``--nodes K`` runs K servers on one database, round-robin.
Method and figures: docs/performance.md.

    .venv/bin/python bench/lease_bench.py [--duration 10] [--connections 1,64] [--url URL]
    .venv/bin/python bench/lease_bench.py --database auto --nodes 2 --connections 64
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import server_figures
from lease_load import Tally, run

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int | None) -> float | None:
    """User+system CPU seconds of another process and its worker processes (`tenure serve
    --workers N`), from /proc (Linux); None elsewhere."""
    if pid is None:
        return None
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0
        for one in [pid, *map(int, kids)]:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    return total / os.sysconf("SC_CLK_TCK")


def pct(values: list[int], q: float) -> float:
    """The q-quantile in milliseconds (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


def report(
    n: int, duration: float, tally: Tally, wall: float, client: float, server: float | None
) -> None:
    cps = tally.cycles / duration
    print(f"connections={n}  duration={duration:.1f}s  cycles={tally.cycles}")
    print(f"  lease events/s   {2 * cps:10.1f}   (acquire + release, each a durable ledger entry)")
    print(f"  cycles/s         {cps:10.1f}")
    for name, values in (("acquire", tally.acquire_ns), ("release", tally.release_ns)):
        mean = statistics.fmean(values) / 1e6 if values else float("nan")
        print(
            f"  {name:<8} latency p50 {pct(values, 0.50):7.2f} ms   p99 {pct(values, 0.99):7.2f} ms"
            f"   mean {mean:7.2f} ms"
        )
    line = f"  CPU over {wall:.1f}s wall (warm-up included):"
    line += f" client {client:.2f}s ({client / wall:.0%})"
    if server is not None:
        line += f", server {server:.2f}s ({server / wall:.0%})"
    print(line + "  [100% = one core]")
    if server is not None and tally.cycles:
        events = 2 * tally.cycles * wall / duration  # warm-up ran at the same rate
        print(f"  server CPU per lease event  {server / events * 1e6:7.0f} µs")
    if tally.errors:
        print(f"  errors           {tally.errors}")


def servers_cpu(pids: list[int]) -> float | None:
    """The CPU seconds of all started servers (and their workers); None if unknown."""
    found = [cpu_seconds(pid) for pid in pids]
    return None if not found or None in found else sum(f for f in found if f is not None)


def start_server(
    args: argparse.Namespace, scratch: str, node: int, processes: list[subprocess.Popen[bytes]]
) -> str:
    """Start one `tenure serve` (node ``node`` of ``--nodes``) and wait until it answers; its URL.
    Nodes share the keys folder; the first creates it before the next starts."""
    port = free_port()
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(port)]
    cmd += ["--data", f"{scratch}/data{node}", "--keys", f"{scratch}/keys"]
    cmd += ["--rate-limit", "1000000", "--log-level", args.server_log_level]
    if args.database:
        cmd += ["--database", args.database]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    processes.append(subprocess.Popen(cmd, cwd=args.checkout))
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, processes[-1])
    return url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not become ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="drive this running server instead of starting one")
    parser.add_argument("--connections", default="1,64", help="comma-separated N values")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per N")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per N")
    parser.add_argument(
        "--server-log-level",
        default="warning",
        help="log level of the server this script starts (info adds an access log line per call)",
    )
    parser.add_argument(
        "--tmp", help="where the started server keeps its ledger (default: $TMPDIR)"
    )
    parser.add_argument(
        "--provenance",
        help="send Accept-Provenance with this cryptosuite (default: the server's, eddsa-jcs-2022)",
    )
    parser.add_argument(
        "--checkout",
        default=str(ROOT),
        help="run the server from another checkout of tenure (to compare revisions)",
    )
    parser.add_argument(
        "--database", help="a postgresql:// URL for the started server(s); `auto`: a throw-away one"
    )
    parser.add_argument("--nodes", type=int, default=1, help="servers on --database (default 1)")
    parser.add_argument("--workers", type=int, help="`tenure serve --workers` of each server")
    args = parser.parse_args()
    if args.nodes > 1 and not args.database:
        parser.error("--nodes needs --database (several nodes share a PostgreSQL ledger)")
    counts = [int(n) for n in args.connections.split(",")]

    processes: list[subprocess.Popen[bytes]] = []
    scratch, database = None, None
    if args.database == "auto":
        import own_postgres

        database, args.database = own_postgres.start()
    if args.url:
        urls = [args.url.rstrip("/")]
    else:
        scratch = tempfile.TemporaryDirectory(prefix="tenure-bench-", dir=args.tmp)
        urls = [start_server(args, scratch.name, node, processes) for node in range(args.nodes)]
    targets = []
    for url in urls:
        split = urlsplit(url)
        targets.append((split.hostname or "127.0.0.1", split.port or 80))

    try:
        import uvloop

        loop_name = "uvloop"
        new_loop: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    except ImportError:
        loop_name, new_loop = "asyncio", asyncio.new_event_loop
    extra = f"Accept-Provenance: {args.provenance}\r\n" if args.provenance else ""
    ledger = args.database or scratch.name if scratch else ""
    where = (
        f"{len(urls)} own server(s) from {args.checkout}, ledger {ledger}" if scratch else urls[0]
    )
    print(f"tenure lease bench: {where}, client loop {loop_name}, {os.cpu_count()} CPUs")
    try:
        for n in counts:
            pids = [process.pid for process in processes]
            wall0, cpu0, srv0 = time.perf_counter(), time.process_time(), servers_cpu(pids)
            db0 = None if database is None else own_postgres.cpu_seconds(database)
            scraped = [server_figures.scrape(url) for url in urls]
            with asyncio.Runner(loop_factory=new_loop) as runner:
                tally = runner.run(run(targets, n, args.warmup, args.duration, extra))
            wall, client_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            groups = [
                server_figures.group_figures(before, server_figures.scrape(url))
                for url, before in zip(urls, scraped, strict=True)
            ]
            srv1 = servers_cpu(pids)
            server_cpu = None if srv0 is None or srv1 is None else srv1 - srv0
            report(n, args.duration, tally, wall, client_cpu, server_cpu)
            for node, figures in enumerate(groups):
                print(f"  node {node}: {figures.line(wall)}")
            if database is not None and db0 is not None and tally.cycles:
                db_cpu = (own_postgres.cpu_seconds(database) or db0) - db0
                events = 2 * tally.cycles * wall / args.duration
                print(f"  PostgreSQL CPU per lease event {db_cpu / events * 1e6:7.0f} µs")
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
        if scratch is not None:
            scratch.cleanup()
        if database is not None:
            database.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
