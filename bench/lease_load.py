"""The load of ``bench/lease_bench.py``: keep-alive connections cycling acquire→release.

Not a test. A thin raw-asyncio HTTP/1.1 client, since it shares the CPUs with the servers it
drives: each connection cycles on a resource of its own and the :class:`Tally` keeps each
call's latency once the warm-up is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import time
from dataclasses import dataclass, field


@dataclass
class Tally:
    acquire_ns: list[int] = field(default_factory=list)
    release_ns: list[int] = field(default_factory=list)
    cycles: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


class Connection:
    """One keep-alive HTTP/1.1 connection speaking just enough of the protocol."""

    def __init__(self, host: str, port: int, extra: str = "") -> None:
        self.host, self.port, self.extra = host, port, extra
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{self.extra}\r\n"
        )
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readuntil(b"\r\n")
        headers = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in headers.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length)
        return int(status_line.split(b" ", 2)[1]), payload

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


async def cycle_forever(
    host: str, port: int, start: float, end: float, tally: Tally, extra: str
) -> None:
    """acquire→release on a resource of this connection's own until `end`; count after `start`."""
    resource = f"bench-{secrets.token_hex(16)}"
    holder = f"bench-{secrets.token_hex(4)}"
    acquire = json.dumps({"resource": resource, "holder": holder, "ttlSeconds": 30}).encode()
    conn = Connection(host, port, extra)
    await conn.open()
    clock = time.perf_counter_ns
    try:
        while True:
            t0 = clock()
            if t0 >= end:
                return
            status, payload = await conn.post("/api/v1/lease/acquire", acquire)
            t1 = clock()
            if status != 201:
                tally.error(f"acquire {status}")
                continue
            owner = json.loads(payload)["data"]["ownerToken"]
            release = json.dumps({"resource": resource, "ownerToken": owner}).encode()
            status, payload = await conn.post("/api/v1/lease/release", release)
            t2 = clock()
            if status != 200:
                tally.error(f"release {status}")
                continue
            if t0 >= start:
                tally.acquire_ns.append(t1 - t0)
                tally.release_ns.append(t2 - t1)
                tally.cycles += 1
    finally:
        await conn.close()


async def run(
    targets: list[tuple[str, int]], n: int, warmup: float, duration: float, extra: str = ""
) -> Tally:
    """``n`` connections, spread round-robin over ``targets`` (host, port)."""
    tally = Tally()
    now = time.perf_counter_ns()
    start = now + int(warmup * 1e9)
    end = start + int(duration * 1e9)
    await asyncio.gather(
        *(cycle_forever(*targets[i % len(targets)], start, end, tally, extra) for i in range(n))
    )
    return tally
