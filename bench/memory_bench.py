"""Memory bounded by live state, not history: RSS while N resources go through acquire → release.

Not a test: prints figures. In-process (default) it drives ``LeaseService`` directly, ``--batch``
calls in flight at a time (so they group-commit as a loaded server's would); with ``--http`` it
starts ``tenure serve`` (``--workers`` as given) and drives it over ``--connections`` keep-alive
connections, summing the RSS of the server's processes. Prints RSS at 0, N/2 and N, after a
restart on that ledger (and the restart's time), and the database's bytes per ledger entry.

    .venv/bin/python bench/memory_bench.py --n 100000
    .venv/bin/python bench/memory_bench.py --http --n 100000 --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ledger.backends import open_storage  # noqa: E402
from ledger.keys.names import NameCodec  # noqa: E402
from ledger.lease.calls import LeaseCall  # noqa: E402
from ledger.writer.service import LeaseService  # noqa: E402


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def db_bytes(data: Path) -> int:
    return sum(f.stat().st_size for f in data.iterdir() if f.name.startswith("tenure.db"))


def names(start: int, stop: int, tag: str) -> Iterator[str]:
    for n in range(start, stop):
        yield f"{tag}-{n}"


async def cycle(service: LeaseService, name: str) -> None:
    granted = await service.lease(LeaseCall("acquire", "t", name, holder="w", ttl_seconds=60))
    token = granted.owner_token
    await service.lease(LeaseCall("release", "t", name, owner_token=token))


async def drive(service: LeaseService, start: int, stop: int, batch: int, tag: str) -> None:
    pending: set[asyncio.Task[None]] = set()
    for name in names(start, stop, tag):
        pending.add(asyncio.ensure_future(cycle(service, name)))
        if len(pending) >= batch:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    if pending:
        await asyncio.wait(pending)


async def in_process(data: Path, n: int, batch: int) -> None:
    me = [os.getpid()]
    secret = secrets.token_bytes(32)
    storage = open_storage(data, names=NameCodec(bytes(32)))
    service = LeaseService(storage, secret)
    await service.start()
    print(f"N=0        RSS {rss_mb(me):8.1f} MB")
    began = time.monotonic()
    for step in range(1, 11):  # every tenth, so a long run shows its trend as it goes
        await drive(service, n * (step - 1) // 10, n * step // 10, batch, "r")
        done = n * step // 10
        rate = done / (time.monotonic() - began)
        print(f"N={done:<9d}RSS {rss_mb(me):8.1f} MB  ({rate:.0f} resources/s)", flush=True)
    await service.stop()
    storage.close()
    began = time.monotonic()
    storage = open_storage(data, names=NameCodec(bytes(32)))
    service = LeaseService(storage, secret)
    await service.start()
    took = time.monotonic() - began
    again = await service.lease(LeaseCall("acquire", "t", "r-0", holder="w"))
    print(f"restart    RSS {rss_mb(me):8.1f} MB  (started in {took:.2f} s;"
          f" r-0's next token {again.data['fencingToken']})")  # fmt: skip
    await service.stop()
    entries = storage.tree_size()
    storage.close()
    print(f"database   {db_bytes(data) / entries:.0f} bytes per entry ({entries} entries)")


def http(data: Path, n: int, connections: int, workers: int) -> None:
    import httpx

    port = free_port()
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(port), "--data", str(data)]
    cmd += ["--keys", str(data.parent / "keys"), "--workers", str(workers), "--log-level", "error"]
    server = subprocess.Popen(cmd, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    tag = secrets.token_hex(16)
    pids = [server.pid, *children(server.pid)]
    print(f"N=0        RSS {rss_mb(pids):8.1f} MB ({len(pids)} processes)")

    def work(part: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            for k in range(part, n, connections):
                name = f"res-{tag}{k:08x}"
                body = {"resource": name, "holder": "w", "ttlSeconds": 60}
                granted = client.post("/api/v1/lease/acquire", json=body).json()["data"]
                release = {"resource": name, "ownerToken": granted["ownerToken"]}
                client.post("/api/v1/lease/release", json=release)

    began = time.monotonic()
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(work, range(connections)))
    print(f"N={n:<9d}RSS {rss_mb(pids):8.1f} MB  ({n / (time.monotonic() - began):.0f}/s)")
    server.terminate()
    server.wait()
    began = time.monotonic()
    server = subprocess.Popen(cmd, cwd=ROOT)
    wait_ready(url)
    took = time.monotonic() - began
    pids = [server.pid, *children(server.pid)]
    print(f"restart    RSS {rss_mb(pids):8.1f} MB  (ready in {took:.2f} s)")
    server.terminate()
    server.wait()


def children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in found.stdout.split()]


def wait_ready(url: str) -> None:
    import httpx

    for _ in range(400):
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("server did not start")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="distinct resources")
    parser.add_argument("--batch", type=int, default=256, help="in-process calls in flight")
    parser.add_argument("--http", action="store_true", help="drive a real server over HTTP")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        if args.http:
            http(data, args.n, args.connections, args.workers)
        else:
            asyncio.run(in_process(data, args.n, args.batch))


if __name__ == "__main__":
    main()
