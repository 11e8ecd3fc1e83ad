"""A reader that stops reading a watch is cut off (TENURE_WATCH_SEND_SECONDS) with a final
``end`` event saying so, and the server buffers nothing for it beyond the socket: its memory
does not grow with the events it could not send."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.conftest import Server
from tests.watch_util import lease_call, namespace, parse

PATIENCE = 2.0
RENEWS = 3000  # ~9 MB of signed events: twice what loopback socket buffers hold


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_slow_reader_is_cut_off_without_the_server_buffering(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_WATCH_SEND_SECONDS", str(PATIENCE))
    fresh_server.args = ["--workers", "1"]  # in-process: the server's pid is the one serving
    fresh_server.start()
    ns = namespace(fresh_server)
    grant = lease_call(fresh_server, ns, "acquire", resource="hot", holder="w", ttlSeconds=600)
    renew = {"resource": "hot", "ownerToken": grant["ownerToken"]}
    with fresh_server.client(**{"Tenure-Namespace": ns}) as api:
        for _ in range(RENEWS):
            assert api.post("/api/v1/lease/renew", json=renew).status_code == 200
    assert fresh_server.process is not None
    before = _rss_kib(fresh_server.process.pid)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", fresh_server.port))
    start = grant["ledger"]["logIndex"]
    request = (
        f"GET /api/v1/watch?from={start} HTTP/1.1\r\nHost: x\r\nTenure-Namespace: {ns}\r\n\r\n"
    )
    sock.sendall(request.encode())
    time.sleep(PATIENCE + 0.5)  # the server's own timeout runs out: nothing to poll for
    after = _rss_kib(fresh_server.process.pid)
    sock.settimeout(PATIENCE)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    body = received.split(b"\r\n\r\n", 1)[1].decode(errors="replace")
    lines = [line for line in body.splitlines() if not line.strip().isalnum()]  # chunk sizes
    events = list(parse(iter(lines)))
    leases = [e for e in events if e[0] == "lease"]
    assert events[-1][0] == "end" and events[-1][2]["data"]["reason"] == "slow_reader"
    assert 0 < len(leases) < RENEWS // 2, len(leases)  # the rest never queued in the server
    print("delivered", len(leases), "of", RENEWS + 1, "rss KiB", before, after)
    assert after - before < 8 * 1024, (before, after)
