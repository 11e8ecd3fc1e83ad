"""Connections spread evenly over the workers (``api/balance.py``): the rule on a fixed clock,
and a real two-worker server given a burst of keep-alive connections, counted per worker from
``/proc``."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from api.balance import MAX_DEFER, PUBLISH_EVERY, START_WAIT, BalancedAcceptor, Shares
from tests.conftest import Server

BURST = 40


def test_a_worker_ahead_steps_back_but_never_for_long() -> None:
    async def scenario() -> None:
        shares = Shares.create(2)
        listener = socket.create_server(("127.0.0.1", 0))
        held = [object()] * 5  # this worker holds five connections
        now = [100.0]
        acceptor = BalancedAcceptor(listener, asyncio.Protocol, shares, 0, held, lambda: now[0])
        try:
            assert shares.counts() == [5, -1]  # published; the sibling is not serving
            assert acceptor.must_wait()  # the first start: the sibling has not come up yet
            now[0] += START_WAIT
            assert not acceptor.must_wait()  # it never came up: take everything
            shares.set(1, 2)
            assert acceptor.must_wait()  # 5 > 2 + 1: leave it to the sibling
            now[0] += MAX_DEFER / 2
            assert acceptor.must_wait()
            now[0] += MAX_DEFER
            assert not acceptor.must_wait()  # stepped back long enough: a stuck sibling
            assert acceptor.must_wait()  # but one connection each MAX_DEFER, not all that wait
            now[0] += MAX_DEFER
            assert not acceptor.must_wait()
            shares.set(1, 4)
            assert not acceptor.must_wait()  # 5 <= 4 + 1
        finally:
            acceptor.close()
            listener.close()
        assert shares.counts()[0] == -1  # a closed worker is not serving

    asyncio.run(scenario())


def _established(port: int) -> dict[int, str]:
    """Socket inode → state of the server side of every TCP connection on ``port``."""
    found: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rpartition(":")[2], 16) == port:
                found[int(fields[9])] = fields[3]
    return found


def _held_by(pid: int, port: int) -> int:
    """How many established connections on ``port`` process ``pid`` holds."""
    inodes = {inode for inode, state in _established(port).items() if state == "01"}
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = str(fd.readlink()) if fd.is_symlink() else ""
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            held += 1
    return held


def test_a_burst_of_connections_is_shared_evenly(fresh_server: Server) -> None:
    """A burst of 40 keep-alive connections, straight after the start and twice more on the
    settled server, splits within 2 of even over two workers. Measured: 64 settled bursts and 32
    straight after a start, on a quiet machine and with two or four busy-looping processes on its
    two cores, all within 1. Before a worker ahead took one connection per ``MAX_DEFER`` (it took
    every one waiting once its 10 ms were up) a busy machine split [25, 15] and [12, 28], a CI run
    [26, 14], [22, 18] and [28, 12]; without the rule (the acceptor taking whatever it finds)
    [23, 17], [19, 21], [24, 16], [17, 23]; uvicorn's own server [0, 40], [40, 0], [31, 9]."""
    fresh_server.args = ["--workers", "2"]
    fresh_server.start()
    assert fresh_server.process is not None
    parent = fresh_server.process.pid
    workers = [int(p) for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
    assert len(workers) == 2

    async def burst() -> list[asyncio.StreamWriter]:
        async def one() -> asyncio.StreamWriter:
            reader, writer = await asyncio.open_connection("127.0.0.1", fresh_server.port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            return writer  # kept open: the connection stays with the worker that took it

        return list(await asyncio.gather(*(one() for _ in range(BURST))))

    async def counted() -> list[int]:
        """A burst, counted per worker, then closed; until neither worker holds a connection and
        each has published that (``PUBLISH_EVERY``)."""
        writers = await burst()
        held = [_held_by(pid, fresh_server.port) for pid in workers]
        for writer in writers:
            writer.close()
        while any(_held_by(pid, fresh_server.port) for pid in workers):
            await asyncio.sleep(0.01)
        await asyncio.sleep(2 * PUBLISH_EVERY)
        return held

    splits = [asyncio.run(counted()) for _ in range(3)]
    assert all(sum(held) == BURST for held in splits), splits
    assert all(abs(held[0] - held[1]) <= 4 for held in splits), splits
