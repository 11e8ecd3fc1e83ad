"""tenure against etcd, side by side: the same wrk load, the same connections, one run.

Not a test: prints figures. etcd (``etcd-server``, fsync on) takes put-if-never-created on a fresh
key, ``tenure serve`` an acquire of a fresh resource (one durable entry, a signed receipt). By
default in steady state (``bench/steady.py``, method in decisions/0025): servers kept warm, the
ledger filled to ``--fill``, ``--ttl`` leases expiring every round; ``--fresh``: new servers each
round. Prints rates, p99s, CPU per request, idle share, tenure's lock and the sweeper's share, the
ratio. Figures: docs/performance.md.

    .venv/bin/python bench/vs_etcd.py [--fill 1000000] [--ttl 5] [--rounds 3] [--keep DIR]
    .venv/bin/python bench/vs_etcd.py --fresh [--duration 10] [--connections 64] [--rounds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from lease_bench import cpu_seconds  # noqa: E402  (a sibling script's /proc reader)
from server_figures import lock_figures, machine_split, scrape  # noqa: E402
from wrk_lua import LUA_ETCD, LUA_TENURE  # noqa: E402


@dataclass
class Figures:
    name: str
    rate: float
    p99_ms: float
    requests: int
    non_2xx: int
    errors: str
    idle: float = 0.0
    """The machine's idle share (0–100) over the run."""
    sweeper: float = 0.0
    """tenure's sweeper's share (0–100) of the time the ledger's lock was held."""
    cpu_us: float = 0.0
    """The server's CPU (user + system, all its processes) per request, in microseconds."""
    detail: str = ""
    """The machine's idle share over the run and, for tenure, its ledger lock's figures."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server exited with {process.returncode}")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url, timeout=1).read()
            return
        time.sleep(0.1)
    raise SystemExit(f"{url}: not ready after {seconds} s")


@contextlib.contextmanager
def etcd(scratch: Path) -> Iterator[tuple[str, int]]:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    cmd = ["etcd", "--data-dir", str(scratch / "etcd"), "--listen-client-urls", url]
    cmd += ["--advertise-client-urls", url, "--listen-peer-urls", f"http://127.0.0.1:{peer}"]
    cmd += ["--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}"]
    cmd += ["--initial-cluster", f"default=http://127.0.0.1:{peer}", "--log-level", "error"]
    with _running(cmd, scratch / "etcd.log") as process:
        wait_http(url + "/health", process)
        yield url, process.pid


@contextlib.contextmanager
def tenure(scratch: Path, extra: list[str]) -> Iterator[tuple[str, str, int]]:
    data, keys = scratch / "tenure-data", scratch / "tenure-keys"
    port = free_port()
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(port), "--data", str(data)]
    cmd += ["--keys", str(keys), *extra]  # nothing else: the default `tenure serve`
    with _running(cmd, scratch / "tenure.log") as process:
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/healthz", process)
        yield url, _api_key(data), process.pid


def _api_key(data: Path) -> str:
    """A key for the bench's tenant (``apikey create`` needs the ledger the server made)."""
    made = subprocess.run(
        [sys.executable, "-m", "api", "apikey", "create", "bench", "--data", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    key = next((word for word in made.stdout.split() if word.startswith("tnr_")), "")
    if not key:
        raise SystemExit(f"tenure apikey create printed no key: {made.stdout}{made.stderr}")
    return key


@contextlib.contextmanager
def _running(cmd: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=out)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wrk(
    name: str,
    url: str,
    lua: str,
    args: argparse.Namespace,
    env: dict[str, str],
    *pids: int,
    lock: bool | None = None,
) -> Figures:
    """Drive ``url`` with ``lua``'s requests; the figures, with the CPU the server's processes
    ``pids`` (each with its children) spent. A run with ``lock`` (by default a ``tenure`` run)
    adds the ledger lock's figures from the server's ``/metrics``."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua)
    threads = str(min(args.threads, args.connections))
    cmd = ["wrk", "-t", threads, "-c", str(args.connections), "-d", f"{args.duration}s"]
    cmd += ["--latency", "-s", script.name, url]
    run = {"RUN": str(random.randrange(2**30))}  # a nonce of this run's names
    samples = scrape(url) if (name == "tenure" if lock is None else lock) else {}
    try:
        before = _cpu(pids)
        with machine_split() as split:
            done = subprocess.run(
                cmd, capture_output=True, text=True, env=os.environ | run | env, check=True
            )
        spent = _cpu(pids) - before
    finally:
        os.unlink(script.name)
    figures = parse_wrk(name, done.stdout)
    figures.cpu_us = spent / max(1, figures.requests) * 1e6
    figures.detail, figures.idle = str(split), split.idle
    if samples:
        lock_run = lock_figures(samples, scrape(url))
        figures.detail += "\n        " + lock_run.line(args.duration)
        figures.sweeper = lock_run.sweeper_share()
    return figures


def _cpu(pids: tuple[int, ...]) -> float:
    return sum(cpu_seconds(pid) or 0.0 for pid in pids)


def parse_wrk(name: str, out: str) -> Figures:
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    total = re.search(r"(\d+) requests in", out)
    if rate is None or p99 is None or total is None:
        raise SystemExit(f"could not read wrk's output:\n{out}")
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    return Figures(
        name,
        float(rate.group(1)),
        float(p99.group(1)) * scale,
        int(total.group(1)),
        int(non2xx.group(1)) if non2xx else 0,
        errors.group(0) if errors else "",
    )


def show(fig: Figures) -> None:
    note = f", {fig.non_2xx} non-2xx" if fig.non_2xx else ""
    note += f", {fig.errors}" if fig.errors else ""
    print(
        f"{fig.name:<7} {fig.rate:>9,.0f} req/s   p99 {fig.p99_ms:>7.1f} ms   {fig.requests:,} "
        f"requests   server CPU {fig.cpu_us:,.0f} µs/request{note}\n        {fig.detail}",
        flush=True,
    )


def missing_tools(tools: tuple[str, ...] = ("etcd", "wrk")) -> list[str]:
    """Each of ``tools`` not on the PATH, with the Debian package that has it."""
    package = {"etcd": "etcd-server", "wrk": "wrk"}
    return [f"{tool} (apt-get install {package[tool]})" for tool in tools if not shutil.which(tool)]


def interpreter() -> str:
    """Which Python serves tenure (this one): its build matters — a CPython whose interpreter
    is a shared ``libpython`` built without profile-guided optimisation (pyenv's default) costs
    ~12% more server CPU per request than Debian's ``/usr/bin/python3.11`` (docs/performance.md)."""
    maps = Path("/proc/self/maps")
    shared = next((x for x in maps.read_text().split() if "libpython" in x), None)
    where = f"libpython shared: {shared}" if shared else "libpython linked in"
    return f"Python {sys.version.split()[0]} at {sys.executable} ({where})"


def alternate(args: argparse.Namespace, probe: str, env: dict[str, str]) -> None:
    """``args.rounds`` times: the default ``tenure serve``, then the same with ``env`` added to
    its environment (a probe's), each fresh, driven and printed as :func:`main` does tenure."""
    for _ in range(args.rounds):
        for name, extra in (("tenure", {}), (probe, env)):
            os.environ.update(extra)
            try:
                with tempfile.TemporaryDirectory() as tmp, tenure(Path(tmp), []) as served:
                    url, key, pid = served
                    show(wrk(name, url, LUA_TENURE, args, {"KEY": key}, pid, lock=True))
            finally:
                for variable in extra:
                    os.environ.pop(variable, None)


def wrk_options(parser: argparse.ArgumentParser, duration: int, ttl: int | None = 5) -> None:
    """The load every wrk bench takes: ``--duration`` measured seconds, ``--connections``,
    ``--threads`` (wrk's), and ``--ttl`` lease seconds unless ``ttl`` is None (the bench adds
    its own)."""
    parser.add_argument("--duration", type=int, default=duration, help="measured seconds per run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    if ttl is not None:
        parser.add_argument("--ttl", type=int, default=ttl, help="lease seconds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    wrk_options(parser, duration=10, ttl=None)
    parser.add_argument("--rounds", type=int, help="alternate the servers this often (3; 1 fresh)")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra `tenure serve` arg")
    parser.add_argument("--fresh", action="store_true", help="fresh servers for every round")
    parser.add_argument("--ttl", type=int, help="lease seconds (5; 60 with --fresh)")
    parser.add_argument("--fill", type=int, default=1_000_000, help="ledger entries before rounds")
    parser.add_argument("--keep", type=Path, help="servers' folder, kept: a rerun tops it up")
    args = parser.parse_args()
    if (args.ttl is not None and args.ttl < 1) or args.fill < 0 or (args.rounds or 1) < 1:
        parser.error("--ttl and --rounds must be at least 1, --fill at least 0")
    args.rounds = args.rounds or (1 if args.fresh else 3)
    args.ttl = args.ttl or (60 if args.fresh else 5)
    if missing := missing_tools():
        print("missing: " + ", ".join(missing), file=sys.stderr)
        return 2
    print(
        f"{os.cpu_count()} cores; {args.connections} connections, {args.duration} s each, "
        f"wrk -t{args.threads}, ttl {args.ttl} s; {interpreter()}",
        flush=True,
    )
    if not args.fresh:
        from steady import steady

        return steady(args)
    return fresh(args)


def fresh(args: argparse.Namespace) -> int:
    """Every round a fresh etcd, then a fresh tenure; the ratio of the rounds' mean rates."""
    env = {"TTL": str(args.ttl)}
    etcd_figs, tenure_figs = [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            scratch = Path(tmp)
            with etcd(scratch) as (url, pid):
                etcd_figs.append(wrk("etcd", url, LUA_ETCD, args, {}, pid))
                show(etcd_figs[-1])
            with tenure(scratch, args.serve_arg) as (url, key, pid):
                tenure_figs.append(wrk("tenure", url, LUA_TENURE, args, env | {"KEY": key}, pid))
                show(tenure_figs[-1])
    etcd_rate = sum(f.rate for f in etcd_figs) / len(etcd_figs)
    tenure_rate = sum(f.rate for f in tenure_figs) / len(tenure_figs)
    etcd_p99 = max(f.p99_ms for f in etcd_figs)
    tenure_p99 = max(f.p99_ms for f in tenure_figs)
    etcd_cpu = sum(f.cpu_us for f in etcd_figs) / len(etcd_figs)
    tenure_cpu = sum(f.cpu_us for f in tenure_figs) / len(tenure_figs)
    for name, rate, p99, cpu in [
        ("etcd", etcd_rate, etcd_p99, etcd_cpu),
        ("tenure", tenure_rate, tenure_p99, tenure_cpu),
    ]:
        print(f"{name:<6} {rate:,.0f} req/s, p99 {p99:.1f} ms, server CPU {cpu:,.0f} µs/request")
    ahead = sum(t.rate > e.rate for e, t in zip(etcd_figs, tenure_figs, strict=True))
    print(f"rounds with tenure ahead: {ahead} of {len(etcd_figs)}")
    print(f"ratio tenure/etcd: {tenure_rate / etcd_rate:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
