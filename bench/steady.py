"""tenure against etcd in steady state: ``bench/vs_etcd.py``'s default mode (decisions/0025).

Not a test. Both servers start once. tenure's ledger is filled to ``--fill`` entries through the
server itself (real grants, and real expiries of the ``--ttl`` leases; ``--keep DIR`` keeps the
folders, a rerun tops up); etcd is warmed by one unmeasured run. Each round: tenure's ``--ttl``-s
lead-in, then its measured run (the lead-in's leases expire inside it); once tenure's ledger has
stopped growing, etcd's measured run. Printed per run: rate, p99, CPU per request, idle share,
the ledger lock and the sweeper's share, the expiries; at the end the median ratio and p99s.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from ledger_stats import entries
from vs_etcd import Figures, etcd, show, tenure, wrk
from wrk_lua import LUA_ETCD, LUA_TENURE

SETTLE_SECONDS = 0.5
"""The ledger counts as settled when it did not grow over this long (sweeps run every 0.1 s)."""
SMALL_FILL = 5000
"""Below this many entries to go, the fill sends single acquires instead of a wrk run."""


@contextlib.contextmanager
def folder(keep: Path | None) -> Iterator[Path]:
    """``keep`` (made if missing, left in place) or a throw-away folder."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def acquire_some(url: str, env: dict[str, str], count: int) -> None:
    """``count`` acquires of fresh names, one at a time over one connection (a small fill)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    head = {"Content-Type": "application/json", "Authorization": f"Bearer {env['KEY']}"}
    tag = os.urandom(4).hex()
    for n in range(count):
        body = {"resource": f"fill-{tag}-{n}", "holder": "fill", "ttlSeconds": int(env["TTL"])}
        conn.request("POST", "/api/v1/lease/acquire", json.dumps(body), head)
        answer = conn.getresponse()
        answer.read()
        if answer.status != 201:
            raise SystemExit(f"fill: an acquire was answered {answer.status}")
    conn.close()


def fill(url: str, data: Path, env: dict[str, str], args: argparse.Namespace) -> int:
    """Drive the server until its ledger holds ``args.fill`` entries; the count reached."""
    started, first = time.monotonic(), entries(data)
    have, rate = first, 2000.0
    print(f"fill: {have:,} entries, filling to {args.fill:,}", flush=True)
    quiet = argparse.Namespace(**vars(args))
    while have < args.fill:
        left = args.fill - have
        if left < SMALL_FILL:
            acquire_some(url, env, left)
        else:
            quiet.duration = int(min(30, max(1, left / rate)))
            run = wrk("fill", url, LUA_TENURE, quiet, env, lock=False)
            if run.non_2xx or run.errors:
                raise SystemExit(f"fill: {run.non_2xx} non-2xx answers, {run.errors}")
            rate = max(500.0, (entries(data) - have) / quiet.duration)
        have = entries(data)
        print(f"fill: {have:,} entries after {time.monotonic() - started:,.0f} s", flush=True)
    took = time.monotonic() - started
    print(f"fill: {have - first:,} entries added in {took:,.0f} s", flush=True)
    return have


def settle(data: Path, since: float, ttl: int) -> float:
    """Wait until ``ttl`` seconds after ``since`` and the ledger stopped growing; seconds waited
    after the run (the sweeper's tail)."""
    time.sleep(max(0.0, since + ttl - time.monotonic()))
    size = entries(data)
    while True:
        time.sleep(SETTLE_SECONDS)
        now = entries(data)
        if now == size:
            return time.monotonic() - since
        size = now


def read_through(data: Path) -> int:
    """Read the ledger's files once, so the rounds meet a warm server's page cache: a first run
    on a kept multi-GB ledger, cold, measured page reads (0.13 against 0.58–0.77 after it,
    docs/performance.md); MB read.

    Its clean pages are dropped first, then read back with readahead off
    (``POSIX_FADV_RANDOM``), so the cache holds the file in single pages, as the server's own
    page reads leave it, whatever read it before. A plain sequential read leaves it in large
    folios on kernels whose ext4 has them (6.16 on): every 4 KB page a checkpoint then writes
    costs ~25–48 µs of kernel CPU instead of ~3–8, and the rounds measured that, not the
    server (docs/decisions/0046)."""
    read = 0
    for path in sorted(data.glob("tenure.db*")):
        with path.open("rb") as file:
            os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            while chunk := file.read(1 << 20):
                read += len(chunk)
    return read >> 20


def tenure_round(
    url: str, data: Path, env: dict[str, str], pid: int, args: argparse.Namespace
) -> Figures:
    """The ttl-long lead-in, then the measured run; its figures and the entries it added."""
    lead = argparse.Namespace(**vars(args))
    lead.duration = args.ttl
    wrk("lead-in", url, LUA_TENURE, lead, env, lock=False)
    before = entries(data)
    figures = wrk("tenure", url, LUA_TENURE, args, env, pid)
    added = entries(data) - before
    expiries = max(0, added - (figures.requests - figures.non_2xx))
    show(figures)
    print(
        f"        ledger: {added:,} entries added in the run, ~{expiries:,} of them expiries"
        f" ({expiries / args.duration:,.0f}/s); {before + added:,} entries now",
        flush=True,
    )
    return figures


def steady(args: argparse.Namespace) -> int:
    """Fill, warm, alternate; print the summary."""
    with (
        folder(args.keep) as scratch,
        etcd(scratch) as (etcd_url, etcd_pid),
        tenure(scratch, args.serve_arg) as (url, key, pid),
    ):
        data = scratch / "tenure-data"
        env = {"KEY": key, "TTL": str(args.ttl)}
        fill(url, data, env, args)
        print(f"read into the page cache: {read_through(data):,} MB", flush=True)
        print(f"settled {settle(data, time.monotonic(), args.ttl):.1f} s", flush=True)
        wrk("warm-up", etcd_url, LUA_ETCD, args, {}, lock=False)
        pairs: list[tuple[Figures, Figures]] = []
        for number in range(1, args.rounds + 1):
            print(f"round {number}:", flush=True)
            ours = tenure_round(url, data, env, pid, args)
            waited = settle(data, time.monotonic(), args.ttl)
            print(f"        (tenure's expiries recorded {waited:.1f} s after)", flush=True)
            theirs = wrk("etcd", etcd_url, LUA_ETCD, args, {}, etcd_pid)
            show(theirs)
            pairs.append((ours, theirs))
        summary(pairs, entries(data))
    return 0


def summary(pairs: list[tuple[Figures, Figures]], size: int) -> None:
    """Per-round ratios, the median ratio, both p99s (median and worst), idle shares."""
    ratios = [ours.rate / theirs.rate for ours, theirs in pairs]
    print("ratios tenure/etcd by round: " + ", ".join(f"{r:.2f}" for r in ratios))
    for name, side in (("tenure", [p[0] for p in pairs]), ("etcd", [p[1] for p in pairs])):
        rates, p99s = [f.rate for f in side], [f.p99_ms for f in side]
        print(
            f"{name:<6} {statistics.median(rates):,.0f} req/s median"
            f" ({min(rates):,.0f}–{max(rates):,.0f}), p99 median {statistics.median(p99s):.1f} ms,"
            f" worst {max(p99s):.1f} ms; machine idle"
            f" {statistics.median(f.idle for f in side):.0f}% (median of runs)"
        )
    share = statistics.median(p[0].sweeper for p in pairs)
    print(f"sweeper's share of the ledger lock's held time: {share:.0f}% (median of runs)")
    print(f"ledger at the end: {size:,} entries")
    print(f"median ratio tenure/etcd: {statistics.median(ratios):.2f}")
