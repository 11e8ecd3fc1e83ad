"""The hot protocol: the lease routes answered from uvicorn's HTTP protocol, under the ASGI app.

For ``POST /api/v1/lease`` and ``/api/v1/lease/{op}``, :class:`HotProtocol` starts the lease
handler itself (:class:`api.accel.hot_route.HotAnswer`, the one the ASGI hot route calls) and
writes its answer in one ``write``, with uvicorn's headers in uvicorn's order, skipping uvicorn's
ASGI cycle and the app's middleware (``bench/protocol_layers.py`` measures both). It keeps what
that cycle does for a connection: the guard's deadline and cap (a subclass), keep-alive, HTTP/1.0,
flow control, pipelining in order, a client gone, the graceful stop, and a crash answered with
the app's signed 500, then logged. What uvicorn treats differently goes to uvicorn
(docs/decisions/0047): ``Expect: 100-continue``, upgrades, percent-encoded paths,
``X-Forwarded-*``, a request pipelined behind an unfinished answer, the concurrency limit and
trace logging."""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
from fastapi.responses import Response
from starlette.types import Message
from uvicorn.logging import TRACE_LOG_LEVEL
from uvicorn.protocols.http.httptools_impl import HEADER_VALUE_RE, STATUS_LINE

from api.accel.hot_route import LEASE_PATH, HotAnswer, lease_op_of
from api.http_guard import GuardedHttpToolsProtocol

_PATH = LEASE_PATH.encode("ascii")
_FORWARDED = frozenset({b"x-forwarded-for", b"x-forwarded-proto"})
_PLAIN_500 = (
    STATUS_LINE[500] + b"content-type: text/plain; charset=utf-8\r\ncontent-length: 21\r\n"
    b"connection: close\r\n\r\nInternal Server Error"
)


class HotCycle:
    """One hot request's state, where uvicorn keeps a ``RequestResponseCycle``: the protocol's
    parser callbacks, read deadline and stop read and set the same attributes."""

    __slots__ = (
        *("body", "disconnected", "flow", "keep_alive"),
        *("message_event", "more_body", "response_complete"),
    )

    def __init__(self, keep_alive: bool, flow: Any) -> None:
        self.body = bytearray()
        self.more_body = True
        self.disconnected = False
        self.response_complete = False
        self.keep_alive = keep_alive
        self.message_event = asyncio.Event()
        self.flow = flow

    async def receive(self) -> Message:
        """The next ASGI message of the request, as uvicorn's cycle gives it."""
        if not self.disconnected and not self.response_complete:
            self.flow.resume_reading()
            await self.message_event.wait()
            self.message_event.clear()
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        message = {"type": "http.request", "body": bytes(self.body), "more_body": self.more_body}
        self.body = bytearray()
        return message


class HotProtocol(GuardedHttpToolsProtocol):
    """:class:`GuardedHttpToolsProtocol` answering the lease routes with :attr:`hot` (a subclass
    per app sets it: :func:`protocol_for`)."""

    hot: HotAnswer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hot_on = self.logger.getEffectiveLevel() > TRACE_LOG_LEVEL  # else uvicorn logs

    def start_request(self) -> None:
        hot, op = self._lease_route()
        if not hot:
            super().start_request()
            return
        keep_alive = self.scope["http_version"] != "1.0" and self.parser.should_keep_alive()
        self.cycle = cycle = HotCycle(keep_alive, self.flow)  # type: ignore[assignment]
        task = self.loop.create_task(self._answer(cycle, self.scope, op))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def _lease_route(self) -> tuple[bool, str | None]:
        """(True, the lease route's op or None) if this request is answered here, with its scope
        filled in as uvicorn fills it; (False, None) if uvicorn answers it."""
        parser, url = self.parser, self.url
        if not self._hot_on or not url.startswith(_PATH) or self.expect_100_continue:
            return False, None
        if parser.get_method() != b"POST" or parser.should_upgrade() or self.root_path:
            return False, None
        previous = self.cycle
        if previous is not None and not previous.response_complete:
            return False, None  # pipelined: uvicorn queues it behind the answer being written
        if self.limit_concurrency is not None or self._forwarded():
            return False, None
        parsed = httptools.parse_url(url)
        raw_path = parsed.path
        if b"%" in raw_path:
            return False, None
        scope = self.scope
        scope["method"] = "POST"
        version = parser.get_http_version()
        if version != "1.1":
            scope["http_version"] = version
        scope["path"] = raw_path.decode("ascii")
        scope["raw_path"] = raw_path
        scope["query_string"] = parsed.query or b""
        return lease_op_of(scope)  # type: ignore[arg-type]

    def _forwarded(self) -> bool:
        return self.config.proxy_headers and any(n in _FORWARDED for n, _ in self.headers)

    async def _answer(self, cycle: HotCycle, scope: Any, op: str | None) -> None:
        """Answer one lease request as :class:`HotRoute` does, written by :meth:`_send`. Its
        ``scope`` is passed in: a request pipelined behind it replaces the protocol's own."""

        async def send(response: Response) -> None:
            await self._send(cycle, response)

        try:
            await self.hot.serve(scope, cycle.receive, op, send)
        except BaseException as error:  # as uvicorn's cycle: a cancelled task gets a plain 500
            await self._crashed(cycle, scope, error)

    async def _crashed(self, cycle: HotCycle, scope: Any, error: BaseException) -> None:
        """The app's signed 500 (a plain one for what is not an Exception, as Starlette's error
        middleware leaves it to uvicorn) if nothing was sent yet; logged as uvicorn logs it."""
        self.logger.error("Exception in ASGI application\n", exc_info=error)
        if cycle.response_complete or cycle.disconnected:
            return
        response = None
        if isinstance(error, Exception):
            try:
                response = await self.hot.crashed(scope, error)
            except Exception as failed:
                self.logger.error("Exception in the 500 handler\n", exc_info=failed)
        if response is None:
            cycle.keep_alive = False
            self._complete(cycle, _PLAIN_500)
        else:
            await self._send(cycle, response)

    async def _send(self, cycle: HotCycle, response: Response) -> None:
        """Write ``response`` whole: its status line, uvicorn's default headers, its own, and
        ``connection: close`` when the connection ends with it."""
        if self.flow.write_paused and not cycle.disconnected:
            await self.flow.drain()
        if cycle.disconnected:
            return
        status = response.status_code
        content = [STATUS_LINE[status]]
        for name, value in (*self.server_state.default_headers, *response.raw_headers):
            if HEADER_VALUE_RE.search(value):
                raise RuntimeError("Invalid HTTP header value.")
            if name == b"connection" and b"close" in value.lower():
                cycle.keep_alive = False
            content += (name, b": ", value, b"\r\n")
        if not cycle.keep_alive and (b"connection", b"close") not in response.raw_headers:
            content.append(b"connection: close\r\n")
        content += (b"\r\n", bytes(response.body))
        self._complete(cycle, b"".join(content))

    def _complete(self, cycle: HotCycle, answer: bytes) -> None:
        self.transport.write(answer)
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()


def protocol_for(app: Any) -> type[GuardedHttpToolsProtocol]:
    """The protocol class uvicorn runs for ``app``: :class:`HotProtocol` bound to its
    :class:`HotAnswer` if the app has one (``TENURE_ACCEL`` names ``hot-protocol``), else the
    guarded protocol alone."""
    hot = getattr(app.state, "hot", None)
    if hot is None:
        return GuardedHttpToolsProtocol
    return type("HotProtocol", (HotProtocol,), {"hot": hot})
