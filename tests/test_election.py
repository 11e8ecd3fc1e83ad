"""`client.elect(...)` against a real server over a socket whose lease clock is fixed (moved by
the test, never slept through): three candidates, one leader at a time, terms that strictly
increase, resign hands over, a leader that cannot renew loses, an observer sees each change,
and the server's ledger shows the same (the audit's capacity rule)."""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from api.app import create_app
from api.client import Client, LeaseHeld, LeaseLost
from api.client.election import Election
from api.settings import Settings
from tests.client_util import Partition, Recorder
from tests.conftest import ROOT, Server, free_port, rid
from tests.uvicorn_thread import serving
from verify.audit import audit, parse_lines

T0 = 1_800_000_000_000


@dataclass
class Served:
    url: str
    now: list[int]


@contextmanager
def served(tmp_path: Path) -> Iterator[Served]:
    """`create_app` under uvicorn on a free port in a thread, its clock fixed at ``now[0]``."""
    now = [T0]
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys", sweep_interval=0.02)
    port = free_port()
    app = create_app(settings, lambda: now[0])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    with serving(config):
        yield Served(f"http://127.0.0.1:{port}", now)


@dataclass
class Candidate:
    """One contender on its own client (its network can be cut), in its own thread."""

    holder: str
    client: Client
    partition: Partition
    resign: threading.Event = field(default_factory=threading.Event)
    lost: threading.Event = field(default_factory=threading.Event)
    outcome: str = "running"


@dataclass
class Bench:
    """What the candidates report: who leads now (a lock around it), each new leader and
    term, and any moment two of them led at once."""

    leaders: queue.Queue[tuple[str, int]] = field(default_factory=queue.Queue)
    leading: list[str] = field(default_factory=list)
    overlaps: list[list[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, holder: str, term: int) -> None:
        with self.lock:
            if self.leading:
                self.overlaps.append([*self.leading, holder])
            self.leading.append(holder)
        self.leaders.put((holder, term))

    def leave(self, holder: str) -> None:
        """``holder`` no longer leads: it resigned, or learnt that it lost the lead."""
        with self.lock:
            if holder in self.leading:
                self.leading.remove(holder)


def contend(candidate: Candidate, name: str, bench: Bench) -> None:
    """Campaign; lead until told to resign or until the lead is lost, then leave the block."""

    def deposed(_: LeaseLost) -> None:
        bench.leave(candidate.holder)  # from here on it must not act as leader
        candidate.lost.set()

    election = candidate.client.elect(name, candidate.holder, ttl=2, on_lost=deposed)
    try:
        with election as leader:
            bench.enter(candidate.holder, leader.term)
            try:
                while not candidate.resign.wait(0.02) and not candidate.lost.is_set():
                    pass
            finally:
                bench.leave(candidate.holder)
        candidate.outcome = "resigned"
    except LeaseLost:
        candidate.outcome = "lost"


def next_leader(bench: Bench, watcher: Election, after: int | None) -> tuple[str, int]:
    """The next leader a candidate reports, and the observer sees the same one."""
    holder, term = bench.leaders.get(timeout=30)
    seen = watcher.observe(after=after, timeout=10)
    assert seen is not None and (seen.holder, seen.term) == (holder, term)
    return holder, term


def test_three_candidates_lead_one_at_a_time_with_rising_terms(tmp_path: Path) -> None:
    name = rid("leader")
    with served(tmp_path) as server:
        candidates = [Candidate(h, *partitioned(server.url)) for h in ("n1", "n2", "n3")]
        by_holder = {c.holder: c for c in candidates}
        bench = Bench()
        watcher = Client(server.url).elect(name, "watcher")
        threads = [threading.Thread(target=contend, args=(c, name, bench)) for c in candidates]
        for thread in threads:
            thread.start()
        first, term1 = next_leader(bench, watcher, None)
        by_holder[first].resign.set()  # resign hands over at once, to a waiting candidate
        second, term2 = next_leader(bench, watcher, term1)
        deposed = by_holder[second]
        deposed.partition.down = True  # it can no longer renew
        assert deposed.lost.wait(10), "a leader that cannot renew never noticed its loss"
        server.now[0] += 3_000  # the server's clock passes its expiry: the sweeper ends it
        third, term3 = next_leader(bench, watcher, term2)
        assert watcher.observe(after=term3, timeout=0.3) is None  # no change: none seen
        by_holder[third].resign.set()
        for thread in threads:
            thread.join(30)
        assert watcher.observe(timeout=0.3) is None and watcher.leader() is None
        assert {first, second, third} == {"n1", "n2", "n3"} and term1 < term2 < term3
        outcomes = [by_holder[h].outcome for h in (first, second, third)]
        assert outcomes == ["resigned", "lost", "resigned"]
        assert bench.overlaps == [] and bench.leading == []
        for candidate in candidates:
            candidate.client.close()
        audit_served(server, tmp_path, {"acquire": 3, "release": 2, "expire": 1})


def partitioned(url: str) -> tuple[Client, Partition]:
    partition = Partition()
    return Client(url, transport=partition), partition


def audit_served(server: Served, tmp_path: Path, kinds: dict[str, int]) -> None:
    """The server's own ledger: the expected events, and a clean audit (its capacity rule:
    no grant while another lease of the name is live)."""
    with httpx.Client(base_url=server.url) as api:
        assert api.get("/api/v1/log/checkpoint").status_code == 200
        size = api.get("/api/v1/log/checkpoint").json()["treeSize"]
        found = api.get("/api/v1/log/entries", params={"start": 0, "end": size}).json()
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    leaves = [json.loads(base64.b64decode(e["leaf"]))["kind"] for e in found["entries"]]
    assert {kind: n for kind, n in Counter(leaves).items() if kind != "renew"} == kinds
    out = tmp_path / "ledger.jsonl"
    cmd = [sys.executable, "-m", "api", "export", "--data", str(tmp_path / "data")]
    exported = subprocess.run([*cmd, "--out", str(out)], cwd=ROOT, capture_output=True)
    assert exported.returncode == 0, exported.stderr
    with out.open("rb") as lines:
        report = audit(list(parse_lines(lines)), trusted_keys=dids)
    assert report.ok and not report.warnings, report


def test_a_candidate_whose_label_still_leads_waits_for_its_expiry_without_spinning(
    tmp_path: Path,
) -> None:
    """The server cannot queue a candidate whose holder label leads (an earlier run of it):
    the campaign waits the server's backoff instead of asking again at once, and gives up
    with LeaseHeld at its timeout."""
    name = rid("leader")
    with (
        served(tmp_path) as server,
        Client(server.url) as client,
        client.elect(name, "n1", ttl=5) as leader,
    ):
        recorder = Recorder(lambda body, attempt: None)
        with Client(server.url, transport=recorder) as again:
            started = time.monotonic()
            with pytest.raises(LeaseHeld) as held:
                again.elect(name, "n1").campaign(timeout=1.5)
            assert 1.0 <= time.monotonic() - started < 5
        assert held.value.data["sameHolderLabel"] is True
        assert 1 <= len(recorder.bodies) <= 3, recorder.bodies
        found = client.elect(name, "other").leader()
        assert found is not None and (found.holder, found.term) == ("n1", leader.term)


def test_the_documented_example_runs(server: Server) -> None:
    """docs/client.md's election example, as written, against a real server."""
    text = (ROOT / "docs" / "client.md").read_text()
    start = text.index("```python\n", text.index("### Leader election")) + len("```python\n")
    example = text[start : text.index("\n```", start)]
    with Client(server.url) as client:
        namespace = client.create_namespace().namespace
    scope: dict[str, Any] = {"URL": server.url, "NAMESPACE": namespace}
    exec(example, scope)
    election = scope["election"]
    assert scope["term"] >= 1 and scope["changed"] is None
    assert election.leader() is None  # it resigned on leaving the block
    again = scope["client"].elect("db-primary", "node-2")
    with again as leader:
        assert leader.term > scope["term"]
    scope["client"].close()
