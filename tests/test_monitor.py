"""`tenure monitor` against real servers: a clean log passes and resumes from its state file; a
forked log (two servers, one key, different trees) is a split view with both signed checkpoints
as evidence; a rewritten entry served by a real proxy is caught; cosignatures verify."""

from __future__ import annotations

import base64
import json
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)

from api.cli import main
from tests.conftest import ROOT, Server, lease, rid
from verify.cosignature import verify_cosignature
from verify.monitor_state import MonitorState
from verify.multikey import public_key_from_did
from verify.note import verify_note

ORIGIN = "monitor.test/log"


def monitor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    """Run `tenure monitor --once --json` in-process; its exit code and its events."""
    code = main(["monitor", *args, "--once", "--json"])
    lines = capsys.readouterr().out.splitlines()
    return code, [json.loads(line) for line in lines]


def grow(server: Server, leases: int) -> int:
    """Take and release ``leases`` leases; the log's size after."""
    with server.client() as client:
        for _ in range(leases):
            resource = rid()
            grant = lease(client, "acquire", resource=resource, holder="w", ttlSeconds=30)
            owner = grant.json()["data"]["ownerToken"]
            lease(client, "release", resource=resource, ownerToken=owner)
        return int(client.get("/api/v1/log/checkpoint").json()["treeSize"])


def keyring(server: Server, path: Path) -> Path:
    path.write_text(httpx.get(server.url + "/api/v1/keys").text)
    return path


@pytest.fixture
def log_a(tmp_path: Path) -> Iterator[Server]:
    (tmp_path / "a").mkdir()
    srv = Server(tmp_path / "a", ["--origin", ORIGIN]).start()
    yield srv
    srv.stop()


def test_clean_log_passes_and_resumes_exactly(
    log_a: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys, state = keyring(log_a, tmp_path / "keys.json"), tmp_path / "state.json"
    size1 = grow(log_a, 3)
    code, events = monitor(capsys, log_a.url, "--state", str(state), "--keys", str(keys))
    assert code == 0, events
    assert events[-1] == events[-1] | {"event": "checkpoint", "treeSize": size1}
    size2 = grow(log_a, 2)
    code, events = monitor(capsys, log_a.url, "--state", str(state))  # keys pinned in the state
    assert code == 0, events
    assert events[0]["treeSize"] == size1 and events[0]["trust"] == "state file"
    assert events[-1]["treeSize"] == size2 and events[-1]["newEntries"] == size2 - size1
    # Resumed state is exactly the state of one pass over the whole log.
    whole = tmp_path / "whole.json"
    assert monitor(capsys, log_a.url, "--state", str(whole), "--keys", str(keys))[0] == 0
    resumed, once = json.loads(state.read_text()), json.loads(whole.read_text())
    assert resumed["frontier"] == once["frontier"] and resumed["invariants"] == once["invariants"]
    assert len(resumed["invariants"]["resources"]) == 5  # five lifecycles still running
    assert MonitorState.from_data(resumed).seen is not None


def test_forked_log_is_a_split_view_with_both_checkpoints(
    log_a: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_b = Server(tmp_path / "b", ["--origin", ORIGIN])  # copytree makes its folder
    shutil.copytree(log_a.root / "keys", log_b.root / "keys")  # one key, two data folders
    log_b.start()
    try:
        keys, state = keyring(log_a, tmp_path / "keys.json"), tmp_path / "state.json"
        grow(log_a, 2)
        assert monitor(capsys, log_a.url, "--state", str(state), "--keys", str(keys))[0] == 0
        grow(log_b, 3)  # a different, longer tree under the same origin and key
        code, events = monitor(capsys, log_b.url, "--state", str(state), "--keys", str(keys))
    finally:
        log_b.stop()
    assert code == 1
    violation = next(e for e in events if e["event"] == "violation")
    assert violation["check"] == "split-view"
    seen, served = violation["evidence"]["seen"], violation["evidence"]["served"]
    assert (seen["treeSize"], served["treeSize"]) == (4, 6)
    did = json.loads(keys.read_text())["keys"][0]["did"]
    public = public_key_from_did(did).public_bytes_raw()
    for checkpoint in (seen, served):  # both are signed by the log's one key: the evidence
        verify_note(checkpoint["note"], ORIGIN, public)
    assert json.loads(state.read_text())["checkpoint"]["treeSize"] == 4  # not advanced


class Tamper(BaseHTTPRequestHandler):
    """A real HTTP proxy to the log that rewrites the holder of one entry it serves."""

    upstream = ""
    index: int | None = None

    def do_GET(self) -> None:
        answer = httpx.get(self.upstream + self.path)
        body = answer.content
        if self.path.startswith("/api/v1/log/entries") and self.index is not None:
            page = answer.json()
            for item in page["entries"]:
                if item["index"] == self.index:
                    entry = json.loads(base64.b64decode(item["leaf"]))
                    entry["holder"] = "0" * len(entry["holder"])
                    leaf = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
                    item["leaf"], item["entry"] = base64.b64encode(leaf).decode(), entry
            body = json.dumps(page).encode()
        self.send_response(answer.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize("index", [None, 1])
def test_rewritten_entry_is_caught(
    log_a: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int | None
) -> None:
    grow(log_a, 2)
    handler = type("Handler", (Tamper,), {"upstream": log_a.url, "index": index})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}"
        keys = keyring(log_a, tmp_path / "keys.json")
        code, events = monitor(capsys, url, "--keys", str(keys))
    finally:
        proxy.shutdown()
    if index is None:  # the faithful proxy passes: the test can tell one from the other
        assert code == 0, events
        return
    assert code == 1
    violation = next(e for e in events if e["event"] == "violation")
    assert violation["check"] == "entries-root", violation
    assert violation["evidence"]["served"]["treeSize"] == 4


def test_cosignatures_verify(
    log_a: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, folder, state = tmp_path / "witness.pem", tmp_path / "cosigned", tmp_path / "state.json"
    cosign = ["--cosign-key", str(key), "--cosign-name", "witness.test/w1"]
    cosign += ["--cosign-dir", str(folder), "--state", str(state)]
    sizes = [grow(log_a, 1), grow(log_a, 2)]
    code, events = monitor(capsys, log_a.url, *cosign)
    assert code == 0 and events[0]["trust"].startswith("first use")
    sizes.append(grow(log_a, 1))
    assert monitor(capsys, log_a.url, *cosign)[0] == 0
    assert monitor(capsys, log_a.url, *cosign)[0] == 0  # nothing new: nothing cosigned again
    pem = load_pem_private_key(key.read_bytes(), password=None)
    public = pem.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    history = [
        json.loads(line) for line in (folder / "cosignatures.jsonl").read_text().splitlines()
    ]
    assert [h["treeSize"] for h in history] == sizes[1:]
    latest = (folder / "checkpoint").read_text()
    assert latest == history[-1]["note"]
    assert verify_cosignature(latest, "witness.test/w1", public) == history[-1]["time"]
    did = httpx.get(log_a.url + "/api/v1/keys").json()["keys"][0]["did"]
    verify_note(latest, ORIGIN, public_key_from_did(did).public_bytes_raw())  # still the log's
    assert (folder / "cosigner.vkey").read_text().startswith("witness.test/w1+")


def next_event(watcher: subprocess.Popen[str], deadline: float) -> dict[str, Any]:
    """The monitor's next JSON line, failing (not hanging) if none comes before ``deadline``."""
    assert watcher.stdout is not None
    ready, _, _ = select.select([watcher.stdout], [], [], max(0.0, deadline - time.monotonic()))
    assert ready, "the monitor printed nothing in time"
    return dict(json.loads(watcher.stdout.readline()))


def test_continuous_mode_follows_the_log_and_stops_cleanly(log_a: Server, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    cmd = [sys.executable, "-m", "api", "monitor", log_a.url, "--state", str(state), "--json"]
    watcher = subprocess.Popen(
        [*cmd, "--interval", "0.05"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    try:
        assert next_event(watcher, deadline)["event"] == "start"
        assert next_event(watcher, deadline)["treeSize"] == 0
        size = grow(log_a, 2)
        sizes = [0]
        while sizes[-1] < size:  # quiet rounds print nothing; each grown tree prints one line
            event = next_event(watcher, deadline)
            assert event["event"] == "checkpoint" and event["newEntries"] > 0, event
            sizes.append(event["treeSize"])
        assert sizes == sorted(set(sizes))
    finally:
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=20) == 0
    assert json.loads(state.read_text())["checkpoint"]["treeSize"] == size


def test_unreachable_log_and_bad_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    code, events = monitor(capsys, dead)
    assert code == 3 and events[-1]["event"] == "unavailable"
    state = tmp_path / "state.json"
    state.write_text('{"type": "tenure-monitor-state", "version": 2}')
    assert main(["monitor", dead, "--state", str(state), "--once"]) == 2
    assert "state file has the wrong shape" in capsys.readouterr().err
