"""Where a steady tenure server's CPU goes, by thread, and what its WAL checkpoints cost.

Not a test: prints figures. Starts the default ``tenure serve`` once on ``--keep``'s folder (a
grown ledger left by ``bench/vs_etcd.py --keep``; a fresh one without it), lets it settle, then
for each of ``--runs`` runs wrk alone (tenure's acquire load, ``--ttl`` leases) and prints wrk's
figures, each worker thread's CPU per request from ``/proc/<pid>/task/*/stat`` (a worker's main
thread is its event loop, which also writes on the lent turns of decisions/0017; the busiest other
thread with mostly system time is its checkpointer) and the PASSIVE and RESTART checkpoints'
counts and time from ``/metrics`` (a RESTART holds the ledger's lock: decisions/0045).

    .venv/bin/python bench/thread_cpu.py --keep DIR [--ttl 5] [--duration 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from steady import folder
from vs_etcd import interpreter, missing_tools, tenure, wrk, wrk_options
from wrk_lua import LUA_TENURE

Ticks = dict[tuple[int, int], tuple[int, int]]
"""(worker pid, thread id) → (user, system) clock ticks."""

_CHECKPOINT = re.compile(r'tenure_sqlite_checkpoint_seconds_(sum|count)\{mode="(\w+)"\} (\S+)')
_TICK = os.sysconf("SC_CLK_TCK")


def workers(parent: int) -> list[int]:
    """The worker processes ``tenure serve`` (``parent``) started, as ``cpu_seconds`` in
    ``bench/lease_bench.py`` finds them (its main thread's ``children``)."""
    kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return sorted(map(int, kids)) or [parent]


def ticks(pids: list[int]) -> Ticks:
    """Every thread's user and system ticks so far."""
    found: Ticks = {}
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found[(pid, int(tid))] = (int(fields[11]), int(fields[12]))
    return found


def checkpoints(url: str) -> dict[str, float]:
    """The checkpoint histograms' sums and counts by mode (``restart_sum``, ``passive_count``…)."""
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    found: dict[str, float] = {}
    for match in _CHECKPOINT.finditer(text):
        key = f"{match[2]}_{match[1]}"
        found[key] = found.get(key, 0.0) + float(match[3])
    return found


def report(before: Ticks, after: Ticks, requests: int, ckpt: dict[str, float]) -> None:
    """Print each thread's CPU per request (busiest first) and the checkpoints' figures."""
    per = 1e6 / _TICK / max(requests, 1)
    spent = {
        key: (u - before.get(key, (0, 0))[0], s - before.get(key, (0, 0))[1])
        for key, (u, s) in after.items()
    }
    for (pid, tid), (user, system) in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
        if user + system:
            role = "event loop" if pid == tid else "thread"
            print(
                f"    worker {pid} {role:10} {tid:>8}: {(user + system) * per:6.1f} µs/request"
                f" (user {user * per:.1f}, system {system * per:.1f})"
            )
    total = sum(user + system for user, system in spent.values())
    print(f"    all threads: {total * per:.1f} µs/request")
    for mode in ("passive", "restart"):
        count, took = ckpt.get(f"{mode}_count", 0.0), ckpt.get(f"{mode}_sum", 0.0)
        mean = 1000 * took / count if count else 0.0
        print(f"    {mode} checkpoints: {count:.0f}, {took:.2f} s in all, {mean:.1f} ms each")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="the server's folder (bench/vs_etcd.py --keep)")
    parser.add_argument("--runs", type=int, default=3)
    wrk_options(parser, duration=20)
    args = parser.parse_args()
    missing = missing_tools(("wrk",))
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)}")
    with folder(args.keep) as scratch, tenure(scratch, []) as (url, key, parent):
        env = {"KEY": key, "TTL": str(args.ttl)}
        print(interpreter())
        time.sleep(3)  # both workers up and balanced (api/balance.py)
        for _ in range(args.runs):
            pids = workers(parent)
            before, ckpt = ticks(pids), checkpoints(url)
            figures = wrk("tenure", url, LUA_TENURE, args, env, parent)
            after, done = ticks(pids), checkpoints(url)
            print(f"{figures.rate:,.0f} req/s, p99 {figures.p99_ms:.1f} ms, {figures.detail}")
            grew = {key: value - ckpt.get(key, 0.0) for key, value in done.items()}
            report(before, after, figures.requests, grew)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
