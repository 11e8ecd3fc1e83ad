"""The guarded protocol writes a response's head and body in one ``send`` (issue 10), and never
holds a head that has no body yet: the real uvicorn protocol, a real event loop, and a transport
that records what would reach the socket."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from api.http_guard import GuardedHttpToolsProtocol

BODY = b'{"status":"pass"}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]


def _request(*extra: bytes) -> bytes:
    head = b"POST /api/v1/lease/acquire HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
    return head + b"".join(extra) + b"\r\n{}"


class Recording(asyncio.Transport):
    """Each ``write`` as the socket would get it, and when the transport was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed_after: int | None = None  # how many writes came before close()
        self.kept_alive = False  # still open once the answer was written

    def write(self, data: Any) -> None:
        assert self.closed_after is None, "written after close"
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed_after is not None

    def close(self) -> None:
        self.closed_after = len(self.writes)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8080)}.get(name)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _serve(app: Any, request: bytes, transport: Recording | None = None) -> Recording:
    """Feed ``request`` to a fresh connection and let the loop run a few iterations."""
    config = Config(app, loop="none", log_level="warning", access_log=False)
    config.load()
    protocol = GuardedHttpToolsProtocol(config, ServerState(), {}, asyncio.get_running_loop())
    transport = transport or Recording()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(8):
        await asyncio.sleep(0)
    transport.kept_alive = not transport.is_closing()
    protocol.connection_lost(None)  # the client goes: the connection's timers stop
    return transport


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 201, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


def test_a_response_goes_out_in_one_write() -> None:
    transport = asyncio.run(_serve(_answer, _request()))
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201 Created\r\n")
    assert b"content-length: %d" % len(BODY) in head
    assert body == BODY
    assert transport.kept_alive


def test_a_closing_response_is_written_whole_before_the_close() -> None:
    transport = asyncio.run(_serve(_answer, _request(b"Connection: close\r\n")))
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b"\r\n\r\n" + BODY)
    assert transport.closed_after == 1


def test_a_head_whose_body_comes_later_is_not_held_back() -> None:
    """A stream's head reaches the client at the end of the loop iteration that made it, not
    when its first part is ready."""
    transport = Recording()
    body_may_come = asyncio.Event()

    async def streaming(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"text/event-stream"), (b"transfer-encoding", b"chunked")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await body_may_come.wait()
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": False})

    async def run() -> list[bytes]:
        serving = asyncio.ensure_future(_serve(streaming, _request(), transport))
        for _ in range(4):
            await asyncio.sleep(0)
        before = list(transport.writes)
        body_may_come.set()
        await serving
        return before

    before = asyncio.run(run())
    assert len(before) == 1 and before[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert before[0].endswith(b"\r\n\r\n")  # the head alone
    assert transport.writes[1:] == [b"9\r\ndata: 1\n\n\r\n0\r\n\r\n"]
