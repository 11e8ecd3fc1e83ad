"""uvicorn's httptools protocol with the two limits it lacks, refused in the API's error shape.

- **A read deadline**: a request must arrive whole, from its first byte (or the connection's
  opening) to the end of its body, within ``TENURE_READ_TIMEOUT`` seconds (default 10), else 408
  and close; uvicorn arms no timer before a first response, so slowloris would hold connections.
  The deadline stops once the request is complete (a slow blocking wait is not cut short).
- **A header size cap**: the request line and headers within ``TENURE_MAX_HEADER_BYTES``
  (default 16 KiB), else 431 and close; a head arriving is measured in raw bytes, a whole one as
  parsed. Refusals are unsigned: nothing above the HTTP parser has run.

Both come from the environment, so every worker uses the same (``tenure serve`` sets them); one
timer per connection and one size sum per head keep them cheap (docs/performance.md)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

READ_TIMEOUT_ENV = "TENURE_READ_TIMEOUT"
MAX_HEADER_BYTES_ENV = "TENURE_MAX_HEADER_BYTES"
REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def _refusal(status: int, code: str, message: str) -> bytes:
    body = json.dumps({"data": {"status": "fail", "error": {"code": code, "message": message}}})
    head = (
        f"HTTP/1.1 {status} {REASONS[status].decode()}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body.encode()


class _HeadersTooLarge(Exception):
    """Raised inside a parser callback to stop parsing; httptools reports it as a parser error,
    which uvicorn answers through :meth:`GuardedHttpToolsProtocol.send_400_response`."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` with a whole-request read deadline and a header size cap."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout = float(os.environ.get(READ_TIMEOUT_ENV, "10"))
        self.max_header_bytes = int(os.environ.get(MAX_HEADER_BYTES_ENV, str(16 * 1024)))
        self._deadline: asyncio.TimerHandle | None = None  # armed at most once at a time
        self._due: float | None = None  # loop time the pending request must be whole by
        self._head_bytes = 0  # raw bytes received while the head is incomplete
        self._in_head = False
        self._too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._due = self.loop.time() + self.read_timeout  # the first byte must come by then too
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        super().data_received(data)
        if self._in_head and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse_head()

    def send_400_response(self, msg: str) -> None:
        if self._too_large:
            self._refuse_head()
        else:
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0
        if self._due is None:  # (the first request keeps the deadline its connection opened with)
            self._due = self.loop.time() + self.read_timeout
        if self._deadline is None:
            self._arm()

    def _refuse_head(self) -> None:
        message = f"the request line and headers exceed {self.max_header_bytes} bytes"
        self._refuse(431, "headers_too_large", message)

    def on_headers_complete(self) -> None:
        """The head's parsed size, counted once it is whole (a head that never ends is cut by
        :meth:`data_received`'s count of raw bytes): per-header callbacks cost ~15 µs a
        request."""
        self._in_head = False
        headers = self.headers
        size = len(self.url) + 4 * len(headers) + sum(len(n) + len(v) for n, v in headers)
        if size > self.max_header_bytes:
            self._too_large = True
            raise _HeadersTooLarge
        self.start_request()

    def start_request(self) -> None:
        """Start answering a request whose head is whole and within the cap: uvicorn's way."""
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._due = None  # the timer, if armed, finds nothing due and is not armed again
        super().on_message_complete()

    def _arm(self) -> None:
        """One timer per connection, not one per request (a timer made and cancelled for every
        request cost more than the rest of this class): it fires at the pending request's
        deadline, or re-arms for the next request's if that one has begun since."""
        self._disarm()
        if self._due is not None:
            self._deadline = self.loop.call_at(self._due, self._check_due)

    def _check_due(self) -> None:
        self._deadline = None
        if self._due is None or self.transport.is_closing():
            return
        if self.loop.time() < self._due:
            self._arm()
        else:
            self._timed_out()

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        if self.cycle is not None and not self.cycle.response_complete and self.cycle.more_body:
            self.cycle.disconnected = True  # the app reading this body sees the caller gone
        message = f"the request did not arrive whole within {self.read_timeout:g} s"
        self._refuse(408, "request_timeout", message)

    def _refuse(self, status: int, code: str, message: str) -> None:
        self.transport.write(_refusal(status, code, message))
        self.transport.close()
