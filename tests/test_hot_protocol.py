"""The hot protocol (api/accel/hot_protocol.py) answers the lease routes as uvicorn's ASGI cycle.

Two real uvicorn servers on real sockets, in this process, on one fixed clock: one runs
``HotProtocol`` (the default), the other the guarded protocol alone, so every request goes
through uvicorn's ASGI cycle. Their answers must agree, on the wire and in ``data``, and the
protocol must keep what uvicorn's cycle does for a connection: keep-alive and ``Connection:
close``, HTTP/1.0, pipelined requests in order, a body in pieces, a client gone, and a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response
from uvicorn.server import ServerState

from api import lease_routes
from api.accel import ACCELERATIONS
from api.accel.hot_protocol import HotProtocol, protocol_for
from api.app import create_app
from api.http_guard import GuardedHttpToolsProtocol
from api.settings import Settings
from api.tenancy import mint_namespace
from tests.conftest import free_port, rid
from tests.test_hot_route import comparable, requests
from tests.uvicorn_thread import serving as in_thread

T0 = 1_800_000_000_000
WITHOUT = ",".join(name for name in ACCELERATIONS if name != "hot-protocol")


def make_app(root: Path, hot: bool) -> FastAPI:
    settings = Settings(
        data_dir=root / "data",
        keys_dir=root / "keys",
        sweep_interval=60,
        accel="all" if hot else WITHOUT,
    )
    return create_app(settings, lambda: T0)


@contextlib.contextmanager
def serving(app: FastAPI) -> Iterator[int]:
    """``app`` served by uvicorn with the protocol ``tenure serve`` would give it; its port."""
    port = free_port()
    config = uvicorn.Config(
        app, port=port, loop="uvloop", http=protocol_for(app), log_level="warning"
    )
    with in_thread(config):
        yield port


@pytest.fixture
def ports(tmp_path: Path) -> Iterator[tuple[FastAPI, int, int]]:
    """The hot app and its port, and the port of the same app without the hot protocol."""
    hot, plain = make_app(tmp_path / "hot", True), make_app(tmp_path / "plain", False)
    with serving(hot) as a, serving(plain) as b:
        yield hot, a, b


def exchange(port: int, raw: bytes, answers: int = 1) -> tuple[list[Answer], bool]:
    """Send ``raw`` on one connection; the ``answers`` read back, and whether the server closed
    the connection after them."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        reader = Reader(sock)
        read = [reader.answer() for _ in range(answers)]
        sock.settimeout(0.5)
        try:
            closed = sock.recv(1) == b""
        except TimeoutError:
            closed = False
        return read, closed


Answer = tuple[int, list[tuple[str, str]], bytes]


class Reader:
    """HTTP/1.1 answers with a Content-Length, read off a socket one by one."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"the connection closed mid-answer: {self.buffer[:200]!r}"
        self.buffer += chunk

    def answer(self) -> Answer:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = [(k.lower(), v) for k, _, v in (line.partition(": ") for line in lines[1:])]
        length = int(dict(headers)["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), headers, body


def post(path: str, body: bytes, extra: str = "", version: str = "1.1") -> bytes:
    head = f"POST {path} HTTP/{version}\r\nHost: x\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def acquire_body() -> bytes:
    return json.dumps({"resource": rid(), "holder": "a", "ttlSeconds": 5}).encode()


def test_the_answers_are_uvicorns(ports: tuple[FastAPI, int, int]) -> None:
    """Status, headers in uvicorn's order (``date`` and ``server`` first) and data agree with
    the ASGI cycle's, for grants, conflicts and every kind of refusal; the receipts verify."""
    _, hot, plain = ports
    with (
        httpx.Client(base_url=f"http://127.0.0.1:{hot}", follow_redirects=True) as a,
        httpx.Client(base_url=f"http://127.0.0.1:{plain}", follow_redirects=True) as b,
    ):
        for method, path, body, headers in requests():
            one = a.request(method, path, content=body, headers=headers)
            two = b.request(method, path, content=body, headers=headers)
            assert comparable(one) == comparable(two), (method, path, one.text)
            assert list(one.headers) == list(two.headers), (path, one.headers, two.headers)
            assert list(one.headers)[:2] == ["date", "server"]


def test_pipelined_requests_are_answered_in_order(ports: tuple[FastAPI, int, int]) -> None:
    """Four requests in one packet, hot and not: four answers, in the order asked."""
    _, port, _ = ports
    body = acquire_body()
    get = json.dumps({"resource": json.loads(body)["resource"]}).encode()
    raw = post("/api/v1/lease/acquire", body) + post("/api/v1/lease/get", get)
    raw += b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + post("/api/v1/lease/acquire", body)
    answers, closed = exchange(port, raw, 4)
    assert [status for status, _, _ in answers] == [201, 200, 200, 409]
    assert json.loads(answers[1][2])["data"]["holder"] == "a"
    assert not closed


def test_a_pipelined_request_keeps_its_own_headers(ports: tuple[FastAPI, int, int]) -> None:
    """A grant in a namespace, then a read of the same name with no namespace, in one packet:
    the grant is the namespace's (the second request's head, parsed before the first is
    answered, must not stand in for the first's)."""
    _, port, _ = ports
    body = acquire_body()
    namespace = f"Tenure-Namespace: {mint_namespace()}\r\n"
    get = json.dumps({"resource": json.loads(body)["resource"]}).encode()
    raw = post("/api/v1/lease/acquire", body, namespace) + post("/api/v1/lease/get", get)
    answers, _ = exchange(port, raw, 2)
    ((status, _, own),), _ = exchange(port, post("/api/v1/lease/get", get, namespace))
    assert [status for status, _, _ in answers] == [201, 200] and status == 200
    assert json.loads(answers[1][2])["data"].get("holder") is None  # the anonymous tenant's
    assert json.loads(own)["data"]["holder"] == "a"


@pytest.mark.parametrize(
    ("extra", "version"), [("Connection: close\r\n", "1.1"), ("", "1.0")], ids=["close", "1.0"]
)
def test_an_answer_that_ends_the_connection_says_so(
    ports: tuple[FastAPI, int, int], extra: str, version: str
) -> None:
    _, port, _ = ports
    raw = post("/api/v1/lease/acquire", acquire_body(), extra, version)
    ((status, headers, _),), closed = exchange(port, raw)
    assert status == 201 and ("connection", "close") in headers and closed


class Kept(asyncio.Transport):
    """A transport that keeps what the protocol writes (no socket: the test feeds the bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.written, self.closed = b"", False

    def write(self, data: Any) -> None:
        self.written += bytes(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 80), "peername": ("127.0.0.1", 1)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_a_body_arriving_after_its_head_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fed to the protocol in pieces, in process: nothing is answered until the body is whole,
    then the handler reads all of it (its answer echoes the body)."""

    async def echo(request: Any, settings: Any, op: str | None) -> Response:
        return Response(await request.body(), 201, media_type="application/json")

    monkeypatch.setattr(lease_routes, "lease_answer", echo)
    app = make_app(tmp_path, True)
    body = acquire_body()
    raw = post("/api/v1/lease/acquire", body)
    head = raw[: -len(body)]

    async def turns() -> None:
        for _ in range(20):  # the loop's turns, not time: the handler runs as far as it can
            await asyncio.sleep(0)

    async def scenario() -> bytes:
        kind = protocol_for(app)
        config = uvicorn.Config(app, http=kind, log_level="warning")
        config.load()
        protocol = kind(config, ServerState(), {}, asyncio.get_running_loop())
        transport = Kept()
        protocol.connection_made(transport)
        for piece in (head, body[:10], body[10:-5]):
            protocol.data_received(piece)
            await turns()
            assert transport.written == b"", "answered before the body was whole"
        protocol.data_received(body[-5:])
        await turns()
        protocol.connection_lost(None)
        return transport.written

    written = asyncio.run(scenario())
    assert written.startswith(b"HTTP/1.1 201 ") and written.endswith(b"\r\n\r\n" + body)


def test_a_client_gone_mid_body_leaves_the_server_serving(
    ports: tuple[FastAPI, int, int],
) -> None:
    _, port, _ = ports
    raw = post("/api/v1/lease/acquire", acquire_body())
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(raw[:-5])
    ((status, _, _),), _ = exchange(port, raw)
    assert status == 201


def test_expect_continue_and_forwarded_requests_go_to_uvicorn(
    ports: tuple[FastAPI, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What uvicorn's cycle treats differently is left to it (and still answered)."""
    _, port, _ = ports
    answered: list[str | None] = []
    answer = HotProtocol._answer

    async def counted(self: HotProtocol, cycle: Any, scope: Any, op: str | None) -> None:
        answered.append(op)
        await answer(self, cycle, scope, op)

    monkeypatch.setattr(HotProtocol, "_answer", counted)
    continued = post("/api/v1/lease/acquire", acquire_body(), "Expect: 100-continue\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(continued.partition(b"\r\n\r\n")[0] + b"\r\n\r\n")
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(1)
        assert interim.startswith(b"HTTP/1.1 100 ")
        sock.sendall(continued.partition(b"\r\n\r\n")[2])
        assert Reader(sock).answer()[0] == 201
    forwarded = post("/api/v1/lease/acquire", acquire_body(), "X-Forwarded-For: 10.1.2.3\r\n")
    assert exchange(port, forwarded)[0][0][0] == 201
    assert answered == []
    assert exchange(port, post("/api/v1/lease/acquire", acquire_body()))[0][0][0] == 201
    assert answered == ["acquire"]


def test_a_crash_is_answered_signed_and_logged(
    ports: tuple[FastAPI, int, int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, port, _ = ports

    async def broken(call: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(app.state.edge.service, "lease_early", broken)
    with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
        ((status, _, body),), closed = exchange(port, post("/api/v1/lease/acquire", acquire_body()))
    answer = httpx.Response(status, content=body)
    assert status == 500 and comparable(answer)[2]["status"] == "unknown" and not closed
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)
    monkeypatch.undo()
    assert exchange(port, post("/api/v1/lease/acquire", acquire_body()))[0][0][0] == 201


def test_the_switch_picks_the_protocol(tmp_path: Path) -> None:
    assert issubclass(protocol_for(make_app(tmp_path / "a", True)), HotProtocol)
    assert protocol_for(make_app(tmp_path / "b", False)) is GuardedHttpToolsProtocol
