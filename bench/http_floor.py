"""The HTTP layer's floor: CPU per request of uvicorn over a bare ASGI app, against a bare
uvloop protocol parsing with httptools, each answering wrk's acquire with a fixed ~2.5 KB body.

Not a test: prints figures. One process each, no tenure code: it bounds what a front end that
skipped uvicorn's request cycle (an ASGI scope, a task, an event and message dicts per request)
could save on the hot lease route (decisions/0044, option 4).

    .venv/bin/python bench/http_floor.py [--rounds 2] [--duration 8]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_etcd import Figures, free_port, show, wait_http, wrk

BODY = b'{"x":"' + b"a" * 2500 + b'"}'
HEAD = b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
LUA = """wrk.method = "POST"
wrk.body = '{"resource":"r","holder":"w","ttlSeconds":5}'
wrk.headers["Content-Type"] = "application/json"
"""


async def bare_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A bare ASGI app: reads the body, answers the fixed body."""
    if scope["type"] != "http":
        return
    message = await receive()
    while message.get("more_body"):
        message = await receive()
    length = str(len(BODY)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", length)]
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


class BareProtocol(asyncio.Protocol):
    """httptools' parser on a uvloop transport; the answer written once a future resolves,
    as a handler awaiting the group commit would."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        import httptools

        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.parser = httptools.HttpRequestParser(self)
        self.body: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.body = []
        done = asyncio.get_running_loop().create_future()
        done.add_done_callback(self._answer)
        done.set_result(None)

    def _answer(self, _: asyncio.Future[None]) -> None:
        self.transport.write(HEAD % len(BODY) + BODY)


def serve(mode: str, port: int) -> None:
    """Run one server on ``port`` until killed."""
    import uvloop

    if mode == "uvicorn":
        import uvicorn

        uvicorn.run(bare_app, port=port, loop="uvloop", http="httptools", log_level="warning")
        return

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(BareProtocol, "127.0.0.1", port)
        await server.serve_forever()

    uvloop.run(main())


def measure(mode: str, args: argparse.Namespace) -> Figures:
    """One wrk run against ``mode`` after a 3 s warm-up, with the server's CPU per request."""
    port = free_port()
    cmd = [sys.executable, __file__, "--serve", mode, "--port", str(port)]
    server = subprocess.Popen(cmd)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(url, server)
        warm = argparse.Namespace(**vars(args) | {"duration": 3})
        wrk(mode, url + "/api/v1/lease/acquire", LUA, warm, {}, server.pid, lock=False)
        return wrk(mode, url + "/api/v1/lease/acquire", LUA, args, {}, server.pid, lock=False)
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--serve", choices=["uvicorn", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    for _ in range(args.rounds):
        for mode in ("uvicorn", "bare"):
            show(measure(mode, args))


if __name__ == "__main__":
    main()
