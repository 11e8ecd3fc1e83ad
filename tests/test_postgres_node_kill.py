"""kill -9 of one of two `tenure serve --database` nodes under load (decisions/0009):
the other keeps serving, takes over the leader's work — the dead-man switch armed on the dead node
fires, the dead node's waiters are purged — and no acknowledged event is missing from the export,
no fencing token repeats, and the export audits clean."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import ROOT, Server, lease, rid
from tests.pg_nodes import Nodes, two_nodes
from verify.audit import audit, parse_lines
from verify.rfc9162 import leaf_hash

THREADS = 8
DEAD_SECONDS = 3


def test_kill_9_of_one_node_under_load(postgres: Any, tmp_path: Path) -> None:
    with two_nodes(postgres, tmp_path) as nodes:
        load, held = Load(nodes), rid()
        with ThreadPoolExecutor(THREADS) as pool:
            runs = [pool.submit(load.run, n) for n in range(THREADS)]
            load.until_acknowledged(50)
            _queue_a_waiter_on(nodes, held)
            armed_at = time.monotonic()  # before the switch's clock starts on the server
            scope = _arm_dead_man_on(nodes.a)
            nodes.a.kill()  # a leads (it started first): b must take over its work
            killed_at = time.monotonic()
            load.until_acknowledged(len(load.acked) + 100)
            load.stop.set()
            for run in runs:
                run.result(timeout=60)
        assert killed_at < armed_at + DEAD_SECONDS, "a died before its switch was due"
        with nodes.b.client() as api:
            _until(lambda: not api.get(f"/api/v1/scopes/{scope}").json()["data"]["leases"])
            _until(lambda: nodes.queued() == 0)  # the dead node's waiter is purged
            dids = [k["did"] for k in api.get("/api/v1/keys").json()["keys"]]
        _check_export(nodes, load.acked, dids, tmp_path / "ledger.jsonl")


class Load:
    """Threads cycling acquire/release on resources of their own over both nodes, moving to
    the survivor when a node stops answering, as a load balancer would."""

    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes
        self.acked: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def run(self, n: int) -> None:
        resource, live = rid(), [self.nodes.a.url, self.nodes.b.url]
        tokens: list[int] = []
        i = n
        while not self.stop.is_set():
            url = live[i % len(live)]
            i += 1
            try:
                with httpx.Client(base_url=url, timeout=30) as client:
                    answer = lease(
                        client, "acquire", resource=resource, holder=f"t{n}", ttlSeconds=2
                    )
                    if answer.status_code == 409:  # a grant whose answer or release was lost
                        continue  # it expires after its 2 s ttl; the token still grows
                    assert answer.status_code == 201, answer.text
                    data = answer.json()["data"]
                    self._ack(data, tokens)
                    released = lease(
                        client, "release", resource=resource, ownerToken=data["ownerToken"]
                    )
                    if released.status_code == 200:
                        self._ack(released.json()["data"], None)
            except httpx.TransportError:
                if url in live and len(live) > 1:
                    live.remove(url)  # the killed node: the balancer's health check drops it
        assert tokens == sorted(set(tokens)), f"tokens repeat or go back: {tokens}"

    def _ack(self, data: dict[str, Any], tokens: list[int] | None) -> None:
        with self._lock:
            self.acked.append(data)
        if tokens is not None:
            tokens.append(int(data["fencingToken"]))

    def until_acknowledged(self, count: int) -> None:
        _until(lambda: len(self.acked) >= count, seconds=60)


def _arm_dead_man_on(node: Server) -> str:
    scope = rid("scope")
    with node.client() as api:
        acquired = lease(api, "acquire", resource=rid(), holder="w", scope=scope, ttlSeconds=600)
        assert acquired.status_code == 201, acquired.text
        armed = api.post(f"/api/v1/scopes/{scope}/heartbeat", json={"deadSeconds": DEAD_SECONDS})
        assert armed.json()["data"]["armed"] is True
    return scope


def _queue_a_waiter_on(nodes: Nodes, resource: str) -> None:
    """A waiter held by node a: its row outlives a, until the new leader purges it."""
    with nodes.b.client() as api:
        assert (
            lease(api, "acquire", resource=resource, holder="h", ttlSeconds=600).status_code == 201
        )

    def wait() -> None:
        with nodes.a.client() as api, contextlib.suppress(httpx.TransportError):
            lease(api, "wait", resource=resource, holder="w", waitSeconds=60)  # a is killed

    threading.Thread(target=wait, daemon=True).start()
    _until(lambda: nodes.queued() == 1)


def _check_export(nodes: Nodes, acked: list[dict[str, Any]], dids: list[str], out: Path) -> None:
    cmd = [sys.executable, "-m", "api", "export", "--out", str(out), "--keys", str(nodes.keys)]
    env = {**os.environ, "TENURE_DATABASE": nodes.url}
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    with out.open("rb") as lines:
        records = list(parse_lines(lines))
    report = audit(records, trusted_keys=dids)
    assert report.ok, report
    leaves = {r["index"]: base64.b64decode(r["leaf"]) for r in records if r["type"] == "entry"}
    for data in acked:
        position = data["ledger"]
        leaf = leaves.get(position["logIndex"])
        assert leaf is not None, f"acknowledged entry {position['logIndex']} is missing"
        assert leaf_hash(leaf) == base64.b64decode(position["leafHash"])


def _until(done: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.05)  # polling the survivor's progress, not making lease time pass
