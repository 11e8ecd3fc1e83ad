"""Server-Sent Events for ``GET /api/v1/watch``, bounded as ``/mcp`` learned to be (0008).

:class:`WatchHub` counts the watches each tenant holds open in this process (past
``watch_max`` a new one is refused with 429) and polls the ledger's size for all of them at
once, so entries written by another worker or node reach every watcher. :class:`EventStream`
sends one watch: each send must be taken by the reader within ``watch_send_seconds`` (the
socket's buffer is the only buffer: nothing queues behind it), and ``watch_budget_bytes`` ends
the stream; both end it with a final event saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from api import logs
from api.requests import RetryAfter
from api.schemas import InputError
from api.settings import Settings
from ledger.lease.watch_names import NamesRead
from ledger.storage import Storage

Ending = Callable[[str, str], bytes]
"""(reason, message) → the final event's bytes."""
outage = logs.Repeating(logging.getLogger("tenure"))
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
    (b"connection", b"close"),  # an ended stream (a slow reader's above all) closes its socket
]


class WatchHub:
    """This process's open watches: the count per tenant and the ledger size they wait on."""

    def __init__(self, storage: Storage, settings: Settings, names: NamesRead | None) -> None:
        self._storage, self._settings, self.names_read = storage, settings, names
        self.size = storage.tree_size()
        self.grew = asyncio.Event()
        self._open: dict[str, int] = {}
        self._poller: asyncio.Task[None] | None = None

    def enter(self, tenant: str) -> None:
        """Count one more watch of ``tenant``; 429 past the limit."""
        most = self._settings.watch_max
        if self._open.get(tenant, 0) >= most:
            message = (
                f"this tenant already has {most} watches open on this server, the most it may;"
                " close one, or resume later with Last-Event-ID"
            )
            retry = RetryAfter(self._settings.watch_heartbeat_seconds)
            raise InputError("too_many_watches", message, status=429) from retry
        self._open[tenant] = self._open.get(tenant, 0) + 1
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def leave(self, tenant: str) -> None:
        left = self._open.pop(tenant) - 1
        if left:
            self._open[tenant] = left
        if not self._open and self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def _poll(self) -> None:
        """One size read per interval for all watches; a growth wakes them all."""
        while True:
            await asyncio.sleep(self._settings.watch_poll_seconds)
            try:
                self.observe(self._storage.tree_size())
            except Exception as error:  # an outage: watchers keep waiting, the next poll retries
                outage.warning("the watch poller cannot read the ledger's size", str(error))

    def observe(self, size: int) -> None:
        if size > self.size:
            self.size = size
            self.grew.set()
            self.grew = asyncio.Event()

    async def wait_past(self, size: int, timeout: float) -> None:
        """Return when the log is larger than ``size``, or after ``timeout`` seconds."""
        if self.size > size:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.grew.wait(), timeout)


class EventStream(Response):
    """The ASGI response of one watch: its events, within the byte budget and send time."""

    def __init__(
        self,
        events: AsyncIterator[bytes],
        ending: Ending,
        settings: Settings,
        done: Callable[[], None],
    ) -> None:
        self.status_code, self.background = 200, None
        self._events, self._ending, self._settings, self._done = events, ending, settings, done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            streaming = asyncio.ensure_future(self._stream(send))
            gone = asyncio.ensure_future(_disconnected(receive))
            await asyncio.wait((streaming, gone), return_when=asyncio.FIRST_COMPLETED)
            for task in (streaming, gone):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await streaming
        finally:
            self._done()

    async def _stream(self, send: Send) -> None:
        budget, patience = self._settings.watch_budget_bytes, self._settings.watch_send_seconds
        sent = 0
        async for chunk in self._events:
            if sent + len(chunk) > budget:
                message = f"this stream sent its {budget} bytes; resume with Last-Event-ID"
                return await _end(send, self._ending("byte_budget", message), patience)
            try:
                await asyncio.wait_for(send(_body(chunk)), patience)
            except TimeoutError:
                message = f"the reader took more than {patience:g} s to read an event"
                return await _end(send, self._ending("slow_reader", message), patience)
            sent += len(chunk)
        await _end(send, b"", patience)


async def _end(send: Send, final: bytes, patience: float) -> None:
    """Send the final event (into the socket's buffer, at most ``patience`` s) and close."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(send(_body(final, more=False)), patience)


def _body(chunk: bytes, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": more}


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
