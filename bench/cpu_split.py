"""Where each server's CPU goes under ``bench/vs_etcd.py``'s load, by library: a ``perf`` split.

Not a test: prints figures. Starts tenure and etcd once on ``--keep``'s folder (a grown ledger
left by ``bench/vs_etcd.py --keep``; a fresh one without it), warms each with one unmeasured
run, then for each runs wrk and ``perf record -a -e cpu-clock`` over the middle of the run.
Prints wrk's rate and, for the server's own processes, each library's share of their CPU
(the interpreter, the kernel, SQLite, the crypto libraries…). Needs ``perf`` (Debian's
``linux-perf``) and the rights to sample the whole machine. Method: decisions/0044.

    .venv/bin/python bench/cpu_split.py [--keep DIR] [--ttl 5] [--duration 14]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from steady import folder
from vs_etcd import Figures, etcd, tenure, wrk, wrk_options
from wrk_lua import LUA_ETCD, LUA_TENURE


def sampled(run: threading.Thread, seconds: int) -> dict[tuple[str, str], float]:
    """``perf record -a`` for ``seconds`` while ``run`` (a started wrk run) goes on: the
    machine's samples by (command, library), as percentages of all of them."""
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "perf.data")
        record = ["perf", "record", "-a", "-F", "999", "-e", "cpu-clock", "-o", data]
        subprocess.run([*record, "--", "sleep", str(seconds)], capture_output=True, check=True)
        run.join()
        report = ["perf", "report", "-i", data, "--sort", "comm,dso", "--stdio"]
        out = subprocess.run(report, capture_output=True, text=True, check=True).stdout
    shares: dict[tuple[str, str], float] = collections.defaultdict(float)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("%") and not line.startswith("#"):
            shares[(parts[1], parts[2])] += float(parts[0].rstrip("%"))
    return shares


def measured(name: str, url: str, lua: str, args: argparse.Namespace, env: dict[str, str]) -> None:
    """One wrk run of ``args.duration`` s on ``url`` with ``perf`` over all but its first and
    last two seconds; prints the rate and the server's split."""
    figures: list[Figures] = []
    run = threading.Thread(target=lambda: figures.append(wrk(name, url, lua, args, env)))
    run.start()
    time.sleep(2)  # wrk's connections open before the sampling starts
    shares = sampled(run, max(1, args.duration - 4))
    comm = "python" if name == "tenure" else "etcd"
    own = {dso: share for (who, dso), share in shares.items() if who == comm}
    total = sum(own.values())
    print(f"{name}: {figures[0].rate:,.0f} req/s; its processes {total:.0f}% of the machine")
    for dso, share in sorted(own.items(), key=lambda item: -item[1])[: args.top]:
        print(f"    {100 * share / total:5.1f}%  {dso}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="the servers' folder (bench/vs_etcd.py --keep)")
    wrk_options(parser, duration=14)
    parser.add_argument("--top", type=int, default=12, help="libraries printed per server")
    args = parser.parse_args()
    missing = [tool for tool in ("perf", "wrk", "etcd") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)}")
    with (
        folder(args.keep) as scratch,
        etcd(scratch) as (etcd_url, _),
        tenure(scratch, []) as (url, key, _),
    ):
        env = {"KEY": key, "TTL": str(args.ttl)}
        wrk("warm-up", url, LUA_TENURE, args, env, lock=False)
        wrk("warm-up", etcd_url, LUA_ETCD, args, {}, lock=False)
        measured("tenure", url, LUA_TENURE, args, env)
        measured("etcd", etcd_url, LUA_ETCD, args, {})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
