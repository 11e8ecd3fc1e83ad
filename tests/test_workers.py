"""Several worker processes on one ledger (docs/decisions/0006), against a live
`tenure serve --workers 2` over real sockets: one grant per slot however the calls spread,
tokens that only grow across processes and a worker's kill -9, FIFO waits across processes,
one Merkle log that audits clean, and a second `tenure serve` on the same folder."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, lease, rid

WORKERS = ["--workers", "2"]


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("multi"), list(WORKERS)).start()
    yield srv
    if srv.process is not None and srv.process.poll() is None:
        srv.stop()


def workers_of(server: Server) -> list[int]:
    assert server.process is not None
    found = subprocess.run(
        ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True, check=False
    )
    return [int(pid) for pid in found.stdout.split()]


def burst(server: Server, count: int, **body: Any) -> list[dict[str, Any]]:
    """``count`` acquires at once, each on its own connection (so they spread over workers)."""

    def one(n: int) -> dict[str, Any]:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            answer: dict[str, Any] = lease(client, "acquire", holder=f"h{n}", **body).json()
            return answer["data"]

    with ThreadPoolExecutor(64) as pool:
        return list(pool.map(one, range(count)))


def test_two_workers_serve(multi: Server) -> None:
    assert len(workers_of(multi)) == 2


@pytest.mark.parametrize("capacity", [1, 5])
def test_a_thousand_concurrent_acquires_grant_exactly_the_capacity(
    multi: Server, capacity: int
) -> None:
    answers = burst(multi, 1000, resource=rid(), ttlSeconds=600, capacity=capacity)
    granted = sorted(a["fencingToken"] for a in answers if a["outcome"] == "GRANTED")
    assert granted == list(range(1, capacity + 1))
    assert sum(a["outcome"] == "HELD" for a in answers) == 1000 - capacity


def cycle(server: Server, resource: str, n: int) -> int:
    with httpx.Client(base_url=server.url, timeout=30) as client:  # a new connection each
        granted = lease(client, "acquire", resource=resource, holder=f"c{n}", ttlSeconds=60)
        data = granted.json()["data"]
        lease(client, "release", resource=resource, ownerToken=data["ownerToken"])
        return int(data["fencingToken"])


def test_tokens_grow_across_workers_and_a_worker_killed_with_9(multi: Server) -> None:
    resource = rid()
    tokens = [cycle(multi, resource, n) for n in range(20)]
    victim = workers_of(multi)[0]
    os.kill(victim, signal.SIGKILL)
    for n in range(20, 60):  # the survivor serves; the parent starts a new worker
        for _ in range(50):
            try:
                tokens.append(cycle(multi, resource, n))
                break
            except httpx.HTTPError:  # a connection the killed worker had accepted
                time.sleep(0.05)
    assert tokens == list(range(1, len(tokens) + 1)) and len(tokens) == 60
    deadline = time.monotonic() + 10
    while len(workers_of(multi)) < 2 or victim in workers_of(multi):
        assert time.monotonic() < deadline, "the killed worker was not replaced"
        time.sleep(0.1)


def queued(server: Server) -> int:
    with sqlite3.connect(server.data / "tenure.db") as conn:
        return int(conn.execute("SELECT count(*) FROM waiters").fetchone()[0])


def test_waits_are_served_first_come_first_served_across_workers(multi: Server) -> None:
    resource = rid()
    with multi.client() as api:
        held = lease(api, "acquire", resource=resource, holder="first", ttlSeconds=60).json()

    def wait(n: int) -> dict[str, Any]:
        with httpx.Client(base_url=multi.url, timeout=60) as client:
            body = {"resource": resource, "holder": f"w{n}", "waitSeconds": 30, "ttlSeconds": 60}
            answer: dict[str, Any] = lease(client, "wait", **body).json()["data"]
            return answer

    base = queued(multi)
    with ThreadPoolExecutor(6) as pool:
        futures = []
        for n in range(6):  # each joins the queue before the next is sent
            futures.append(pool.submit(wait, n))
            deadline = time.monotonic() + 10
            while queued(multi) < base + n + 1:
                assert time.monotonic() < deadline, "the waiter never queued"
                time.sleep(0.01)
        token = held["data"]["ownerToken"]
        order = []
        for n in range(6):
            with multi.client() as api:
                lease(api, "release", resource=resource, ownerToken=token)
            granted = futures[n].result(timeout=30)
            order.append(granted["holder"])
            token = granted["ownerToken"]
    assert order == [f"w{n}" for n in range(6)]


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_one_log_whose_checkpoints_verify(multi: Server, tmp_path: Path) -> None:
    burst(multi, 200, resource=rid(), ttlSeconds=600, capacity=3)
    with multi.client() as api:
        assert api.get("/api/v1/log/checkpoint").status_code == 200
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    out = tmp_path / "ledger.jsonl"
    assert tenure("export", "--data", str(multi.data), "--out", str(out)).returncode == 0
    audited = tenure("audit", str(out), *(arg for did in dids for arg in ("--trust", did)))
    assert audited.returncode == 0, audited.stdout + audited.stderr


def test_a_second_serve_on_the_same_folder_shares_the_ledger(multi: Server, tmp_path: Path) -> None:
    second = Server(multi.root, ["--workers", "1"])
    second.root = multi.root
    second.start()
    try:
        resource = rid()
        with multi.client() as a, second.client() as b:
            granted = lease(a, "acquire", resource=resource, holder="a", ttlSeconds=60).json()
            assert lease(b, "acquire", resource=resource, holder="b").status_code == 409
            lease(b, "release", resource=resource, ownerToken=granted["data"]["ownerToken"])
            after = lease(b, "acquire", resource=resource, holder="b").json()["data"]
            assert after["fencingToken"] == 2
    finally:
        second.stop()
