"""`GET /mcp` opens no stream: tenure sends no server-initiated messages, so a real `tenure
serve` answers 405 (Allow: POST) at once, and many such GETs hold neither sockets nor memory."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server

pytest.importorskip("mcp")
STREAM = {"Accept": "text/event-stream"}


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (the workers of `tenure serve`)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        found.append(queue.pop())
        queue.extend(children.get(found[-1], []))
    return found


def _rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def _get(url: str) -> httpx.Response:
    with httpx.Client(timeout=httpx.Timeout(5.0)) as client:
        return client.get(url + "/mcp", headers=STREAM)  # reads the whole body: no stream


def test_get_is_refused_without_opening_a_stream(server: Server) -> None:
    answer = _get(server.url)
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert answer.json()["data"]["error"]["code"] == "method_not_allowed"
    assert httpx.delete(server.url + "/mcp", timeout=5).status_code == 405


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_many_gets_hold_no_sockets_or_memory(server: Server) -> None:
    assert server.process is not None
    pids = _tree(server.process.pid)
    with ThreadPoolExecutor(32) as pool:  # warm up allocators and connection handling
        list(pool.map(_get, [server.url] * 100))
    before = _rss_kib(pids)
    with ThreadPoolExecutor(64) as pool:
        answers = list(pool.map(_get, [server.url] * 1500))
    assert {answer.status_code for answer in answers} == {405}
    grown = _rss_kib(pids) - before
    assert grown < 16 * 1024, f"{grown} KiB more after 1,500 GETs"
    sockets = sum(_sockets(pid) for pid in pids)
    assert sockets < 50, f"{sockets} sockets still open"
    listed = httpx.post(
        server.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert listed.status_code == 200 and listed.json()["result"]["tools"]


def _sockets(pid: int) -> int:
    folder = f"/proc/{pid}/fd"
    return sum(1 for fd in os.listdir(folder) if os.readlink(f"{folder}/{fd}").startswith("sock"))
