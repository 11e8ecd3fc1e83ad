"""Connections spread evenly over the workers of `tenure serve --workers N`.

The workers share one listening socket; left to the kernel, whichever worker wakes first accepts
every waiting connection, and a client that opens its pool at once can leave one core idle for
the connections' whole life (figures in docs/performance.md, "Connections spread evenly").

Each worker publishes how many connections it holds in a slot of a shared ``memfd`` block (-1
while not serving) and takes a waiting connection only when it holds at most one more than the
least-loaded serving sibling. One that is ahead steps back a millisecond and looks again, at most
``MAX_DEFER`` times before it takes one, so a stuck sibling delays a connection by at most that.
At the first start every worker waits (at most ``START_WAIT``) until all have come up.
"""

from __future__ import annotations

import asyncio
import mmap
import os
import socket
import ssl
import struct
from collections.abc import Callable, Sized
from typing import Any

import uvicorn

SLACK = 1
"""How many connections a worker may hold above the least-loaded sibling and still accept."""
PAUSE = 0.001
MAX_DEFER = 0.01
"""Seconds a worker that is ahead leaves a waiting connection to its siblings before taking it."""
START_WAIT = 3.0
ACCEPT_BATCH = 32
"""Connections taken per wake-up at most (each counted before the next is considered)."""
PUBLISH_EVERY = 0.1
"""Seconds between publications of the count (it is also published at every accept)."""
_SLOT = struct.Struct("q")


class Shares:
    """The workers' connection counts: one signed 64-bit slot each, -1 while not serving."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, os.fstat(fd).st_size)
        self.slots = len(self._map) // _SLOT.size

    @classmethod
    def create(cls, slots: int) -> Shares:
        """A fresh block (the parent's), every slot not serving, inheritable by its workers."""
        fd = os.memfd_create("tenure-connections", 0)
        os.ftruncate(fd, slots * _SLOT.size)
        os.set_inheritable(fd, True)
        shares = cls(fd)
        for slot in range(slots):
            shares.set(slot, -1)
        return shares

    def set(self, slot: int, count: int) -> None:
        _SLOT.pack_into(self._map, slot * _SLOT.size, count)

    def counts(self) -> list[int]:
        return [_SLOT.unpack_from(self._map, n * _SLOT.size)[0] for n in range(self.slots)]


class BalancedAcceptor:
    """Accepts from ``sock`` for this worker (``slot``) by the rule in the module doc, and hands
    each connection to the event loop with ``factory``; closes as an asyncio server does."""

    def __init__(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        shares: Shares,
        slot: int,
        connections: Sized,
        clock: Callable[[], float] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._sock, self._factory, self._tls = sock, factory, tls
        self._shares, self._slot, self._connections = shares, slot, connections
        self._loop = asyncio.get_running_loop()
        self._clock = clock or self._loop.time  # a test's fixed clock
        self._pending = 0  # accepted, not yet a connection of the protocol
        self._ahead_since: float | None = None
        self._started = self._clock()
        self._closed = False
        sock.setblocking(False)
        self._publish()
        self._loop.add_reader(sock.fileno(), self._readable)
        self._loop.call_later(PUBLISH_EVERY, self._tick)

    def _held(self) -> int:
        return len(self._connections) + self._pending

    def _publish(self) -> None:
        self._shares.set(self._slot, self._held())

    def _tick(self) -> None:
        if not self._closed:
            self._publish()
            self._loop.call_later(PUBLISH_EVERY, self._tick)

    def must_wait(self) -> bool:
        """Whether to leave the waiting connection to a sibling for now (see module doc)."""
        now = self._clock()
        counts = self._shares.counts()
        others = [n for slot, n in enumerate(counts) if slot != self._slot]
        if now - self._started < START_WAIT and min(others, default=0) < 0:
            return True  # the first start: not every worker has come up yet
        serving = [n for n in others if n >= 0]
        if not serving or self._held() <= min(serving) + SLACK:
            self._ahead_since = None
            return False
        if self._ahead_since is None:
            self._ahead_since = now
        if now - self._ahead_since < MAX_DEFER:
            return True
        self._ahead_since = None  # take this one; the next waits its turn again
        return False

    def _readable(self) -> None:
        """Take waiting connections while this worker is not ahead (up to ``ACCEPT_BATCH``, as
        the event loop's own server takes all it finds), then step back if it is."""
        for _ in range(ACCEPT_BATCH):
            if self.must_wait():
                self._loop.remove_reader(self._sock.fileno())
                self._loop.call_later(PAUSE, self._resume)
                return
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            conn.setblocking(False)
            self._pending += 1
            self._publish()
            self._loop.create_task(self._start(conn))

    async def _start(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn, ssl=self._tls)
        except OSError:  # ssl.SSLError too: a refused handshake
            conn.close()  # the client left before its transport was made
        finally:
            self._pending -= 1
            self._publish()

    def _resume(self) -> None:
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._readable)

    def close(self) -> None:
        """Stop accepting; the siblings take what arrives from now on."""
        if not self._closed:
            self._closed = True
            self._loop.remove_reader(self._sock.fileno())
            self._shares.set(self._slot, -1)

    async def wait_closed(self) -> None:
        return None


class BalancedServer(uvicorn.Server):
    """uvicorn's server whose inherited listening socket is accepted from by a
    :class:`BalancedAcceptor` instead of the event loop's own server."""

    def __init__(self, config: uvicorn.Config, shares: Shares, slot: int) -> None:
        super().__init__(config)
        self._shares, self._slot = shares, slot

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # the app's lifespan, no listener of its own
        config, state = self.config, self.server_state

        def factory() -> Any:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=state, app_state=self.lifespan.state
            )

        for sock in sockets or []:
            acceptor = BalancedAcceptor(
                sock, factory, self._shares, self._slot, state.connections, tls=config.ssl
            )
            self.servers.append(acceptor)  # type: ignore[arg-type]
