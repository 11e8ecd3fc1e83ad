"""Limits at the socket: slow or partial requests are cut off, huge headers refused,
and readers cannot make the log sign checkpoints faster than once a second. Real server, real
sockets: these are limits of the HTTP parser and the sealer, not of a route."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import httpx

from tests.conftest import Server, lease, rid


def _read_all(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


def test_partial_requests_are_answered_408_and_closed(fresh_server: Server) -> None:
    fresh_server.args = ["--read-timeout", "1"]
    fresh_server.start()
    port = int(fresh_server.url.rsplit(":", 1)[1])
    silent, partial, body = [], [], []
    for _ in range(40):
        silent.append(socket.create_connection(("127.0.0.1", port)))  # opens, sends nothing
        head = socket.create_connection(("127.0.0.1", port))
        head.sendall(b"POST /api/v1/lease/get HTTP/1.1\r\nHost: x\r\n")  # headers never end
        partial.append(head)
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(
            b"POST /api/v1/lease/get HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"  # 1 of 100 body bytes
        )
        body.append(slow)
    started = time.monotonic()
    for sock in partial + body:
        answer = _read_all(sock, 5)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
        assert b"request_timeout" in answer
    for sock in silent:
        assert _read_all(sock, 5).startswith(b"HTTP/1.1 408 ")
    assert time.monotonic() - started < 4  # all cut at ~1 s, not held open
    with fresh_server.client() as api:  # and the server still serves
        assert lease(api, "acquire", resource=rid(), holder="w").status_code == 201


def test_each_request_on_a_kept_alive_connection_gets_its_own_deadline(
    fresh_server: Server,
) -> None:
    """A second request begun while the connection's first deadline is still pending is cut a
    whole read timeout after its own first byte, not at the first one's deadline (the guard
    keeps one timer per connection and re-arms it)."""
    fresh_server.args = ["--read-timeout", "1"]
    fresh_server.start()
    port = int(fresh_server.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(5)
    first = b""
    while b"\r\n\r\n" not in first:
        first += sock.recv(65536)
    head, _, body = first.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    length = int(
        next(
            v
            for k, _, v in (line.partition(b": ") for line in head.split(b"\r\n"))
            if k.lower() == b"content-length"
        )
    )
    while len(body) < length:  # the whole first answer, which may come in several segments
        body += sock.recv(65536)
    time.sleep(0.5)  # real time: the deadline is a wall-clock limit of the socket
    sock.sendall(b"POST /api/v1/lease/get HTTP/1.1\r\nHost: x\r\n")  # never ends
    began = time.monotonic()
    answer = _read_all(sock, 5)
    cut_after = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
    assert 0.9 <= cut_after < 3, cut_after


def test_a_complete_blocking_wait_is_not_cut_by_the_read_deadline(fresh_server: Server) -> None:
    fresh_server.args = ["--read-timeout", "1"]
    fresh_server.start()
    resource = rid()
    with fresh_server.client() as api:
        held = lease(api, "acquire", resource=resource, holder="a", ttlSeconds=2).json()["data"]
        waited = lease(api, "wait", resource=resource, holder="b", waitSeconds=10)
        assert waited.status_code == 201, waited.text  # granted when the 2 s lease expired
        assert waited.json()["data"]["fencingToken"] > held["fencingToken"]


def test_oversized_headers_get_431_before_the_app(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        big = api.get("/healthz", headers={"X-Filler": "a" * 20_000})
        assert big.status_code == 431
        assert big.json()["data"]["error"]["code"] == "headers_too_large"
        many = api.get("/healthz", headers={f"X-H{i}": "b" * 100 for i in range(200)})
        assert many.status_code == 431
        assert api.get("/healthz", headers={"X-Filler": "a" * 8_000}).status_code == 200
    port = int(fresh_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as flood:  # 16 MB of one header
        flood.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        try:
            while sent < 16 * 1024 * 1024:
                flood.sendall(b"c" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused and closed long before 16 MB
        assert sent < 16 * 1024 * 1024 or _read_all(flood, 2).startswith(b"HTTP/1.1 431 ")


def test_readers_cannot_make_the_log_sign_faster_than_once_a_second(tmp_path: Path) -> None:
    """For the whole server, not per worker process: the default server's workers share the turn
    to seal (``ledger/writer/sealturn.py``), so readers spread over both get one sealing a
    second."""
    server = Server(tmp_path).start()

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            answers = []
            for _ in range(5):  # the tree grows before every round of readers
                await client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
                answers += await asyncio.gather(
                    *(client.get("/api/v1/log/checkpoint") for _ in range(20))
                )
            return answers

    started = time.monotonic()
    try:
        answers = asyncio.run(burst())
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    assert all(a.status_code == 200 for a in answers)
    sizes = [a.json()["treeSize"] for a in answers]
    assert sizes == sorted(sizes)  # every reader sees the tree its round grew, or later
    signed = {(a.json()["treeSize"], a.json()["timestamp"]) for a in answers}
    assert len(signed) <= 5 and elapsed >= 0.9 * (len(signed) - 1), (signed, elapsed)
