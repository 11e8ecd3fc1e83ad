"""The HTTP layers' CPU per request, in process: uvicorn's ASGI cycle against the hot protocol.

The lease handler is replaced by one returning a fixed answer (as in
``bench/hot_route_layers.py``); wrk's acquire is fed to the protocol's ``data_received`` over a
transport that keeps nothing, and the loop runs until the answer is written whole. Left: the
protocol, the ASGI app in front of the handler and the write — uvicorn's ``HttpToolsProtocol``
(its proxy-headers middleware, the app's middleware, the hot route) against
``api.accel.hot_protocol.HotProtocol``.

Not a test: prints CPU µs per request (min and median of 7 rounds of 20,000 requests):
``.venv/bin/python bench/protocol_layers.py``."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvicorn
import uvloop
from fastapi.responses import Response
from uvicorn.server import ServerState

from api import lease_routes

ROUNDS, REQUESTS = 7, 20_000
BODY = b'{"resource":"res-00000000000000000000000000000000","holder":"w","ttlSeconds":5}'
REQUEST = (
    b"POST /api/v1/lease/acquire HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
    b"Content-Type: application/json\r\nAuthorization: Bearer tnr_x\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)
ANSWER = b"x" * 2500  # about an acquire's answer


async def fixed(request: Any, settings: Any, op: str | None) -> Response:
    return Response(ANSWER, 201, media_type="application/json")


class Transport(asyncio.Transport):
    """Keeps nothing: counts the bytes written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write(self, data: Any) -> None:
        self.written += len(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 40000)}.get(name)

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


async def measure(hot: bool) -> list[float]:
    from api.accel.hot_protocol import protocol_for
    from api.app import create_app
    from api.http_guard import GuardedHttpToolsProtocol
    from api.settings import Settings

    root = Path(tempfile.mkdtemp())
    app = create_app(Settings(data_dir=root / "data", keys_dir=root / "keys"))
    kind = protocol_for(app) if hot else GuardedHttpToolsProtocol
    config = uvicorn.Config(app, http=kind, log_level="warning")
    config.load()
    loop = asyncio.get_running_loop()
    protocol = kind(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = Transport()
    protocol.connection_made(transport)
    answered = protocol.on_response_complete
    waiter: asyncio.Future[None] = loop.create_future()

    def complete() -> None:  # both protocols call it once an answer is written whole
        answered()
        waiter.set_result(None)

    protocol.on_response_complete = complete  # type: ignore[method-assign]
    rounds = []
    for _ in range(ROUNDS):
        began = time.process_time()
        for _ in range(REQUESTS):
            waiter = loop.create_future()
            protocol.data_received(REQUEST)
            await waiter
        rounds.append((time.process_time() - began) / REQUESTS * 1e6)
    protocol.connection_lost(None)
    return sorted(rounds)


def main() -> int:
    lease_routes.lease_answer = fixed  # type: ignore[assignment]
    for name, hot in (("uvicorn's ASGI cycle", False), ("hot protocol", True)):
        rounds = uvloop.run(measure(hot))
        median = rounds[len(rounds) // 2]
        print(f"{name:<22} µs per request: min {rounds[0]:.2f}, median {median:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
