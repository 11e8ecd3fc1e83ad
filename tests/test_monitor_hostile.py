"""A hostile log can neither hang nor bloat `tenure monitor --once`: over a real socket, an endless
tree, an answer trickled a byte at a time and a 300 MB answer each end it within its deadlines,
exit 3 with a message naming the limit, and leave its peak memory near a quiet run's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from ledger.log.checkpoint import checkpoint_body, sign_note
from tests.conftest import ROOT
from tests.hostile_log import Route, ledger_routes, send_json, serve
from tests.test_audit import ORIGIN, Ledger, clean
from verify.multikey import did_key

RUN = """
import resource, sys
from api.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)
sys.exit(code)
"""
"""`tenure monitor` in a child that reports its peak RSS (MiB) as its last stderr line."""


def run_monitor(url: str, ledger: Ledger, *args: str) -> tuple[int, float, int, list[str]]:
    """Exit code, seconds taken, peak MiB, and the JSON events of `tenure monitor --once`."""
    trust = did_key(ledger.key.public_key())
    cmd = [sys.executable, "-c", RUN, "monitor", url, "--once", "--json", "--trust", trust]
    started = time.monotonic()
    child = subprocess.run(
        [*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    took = time.monotonic() - started
    peak = int(child.stderr.strip().splitlines()[-1])
    return child.returncode, took, peak, child.stdout.splitlines()


def message(lines: list[str]) -> str:
    last = json.loads(lines[-1])
    assert last["event"] == "unavailable", lines
    return str(last["message"])


@pytest.fixture(scope="module")
def quiet_peak() -> int:
    """A clean hand-made log's peak: the yardstick for "bounded"."""
    ledger = clean()
    with serve(ledger_routes(ledger)) as url:
        code, _, peak, lines = run_monitor(url, ledger)
    assert code == 0, lines
    return peak


def signed_checkpoint(ledger: Ledger, size: int) -> dict[str, object]:
    note = sign_note(checkpoint_body(ORIGIN, size, b"\x01" * 32), ORIGIN, ledger.key)
    return {"treeSize": size, "note": note}


def endless(ledger: Ledger) -> dict[str, Route]:
    """A signed tree of 2^40 entries whose pages never run out (each entry breaks the rules)."""

    def checkpoint(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
        send_json(h, signed_checkpoint(ledger, 1 << 40))

    def entries(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
        page = [{"index": i, "leaf": "bm90IGpzb24="} for i in range(q["start"], q["start"] + 1000)]
        send_json(h, {"entries": page})

    return {"/api/v1/log/checkpoint": checkpoint, "/api/v1/log/entries": entries}


def trickled(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
    """A checkpoint answer that announces 500 bytes and sends one every half second."""
    h.send_response(200)
    h.send_header("Content-Length", "500")
    h.end_headers()
    for _ in range(500):
        h.wfile.write(b" ")
        h.wfile.flush()
        time.sleep(0.5)


def huge(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
    """300 MB of JSON whitespace, no Content-Length: only counting the bytes can stop it."""
    h.protocol_version = "HTTP/1.0"
    h.send_response(200)
    h.end_headers()
    chunk = b" " * (1 << 16)
    for _ in range(300_000_000 // len(chunk)):
        h.wfile.write(chunk)


def test_an_endless_tree_ends_at_the_round_deadline(quiet_peak: int) -> None:
    ledger = clean()
    with serve(endless(ledger)) as url:
        code, took, peak, lines = run_monitor(url, ledger, "--round-timeout", "3")
    assert code == 3 and took < 20, (took, lines)
    assert "--round-timeout 3 s" in message(lines)
    assert peak < quiet_peak + 40, (peak, quiet_peak)


def test_a_trickled_answer_ends_at_the_request_deadline(quiet_peak: int) -> None:
    ledger = clean()
    with serve({"/api/v1/log/checkpoint": trickled}) as url:
        code, took, _, lines = run_monitor(url, ledger, "--request-timeout", "2")
    assert code == 3 and took < 15, (took, lines)
    assert "no complete answer within --request-timeout 2 s" in message(lines)


def test_a_300_mb_answer_is_refused_at_the_cap(quiet_peak: int) -> None:
    ledger = clean()
    with serve({"/api/v1/log/checkpoint": huge}) as url:
        code, took, peak, lines = run_monitor(url, ledger)
    assert code == 3 and took < 30, (took, lines)
    assert "the answer grew over the 8388608 bytes a monitor reads" in message(lines)
    assert peak < quiet_peak + 40, (peak, quiet_peak)


def test_bad_timeouts_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from api.cli import main

    with pytest.raises(SystemExit) as exit:
        main(["monitor", "http://127.0.0.1:9", "--round-timeout", "0"])
    assert exit.value.code == 2
    assert "--round-timeout: seconds above 0 and under a week, not '0'" in capsys.readouterr().err


def test_the_state_file_is_not_rewritten_when_nothing_changed(tmp_path: Path) -> None:
    ledger, state = clean(), tmp_path / "state.json"
    with serve(ledger_routes(ledger)) as url:
        assert run_monitor(url, ledger, "--state", str(state))[0] == 0
        first = state.stat().st_mtime_ns
        state.chmod(0o444)  # a rewrite would replace it: its inode would change
        inode = state.stat().st_ino
        assert run_monitor(url, ledger, "--state", str(state))[0] == 0
    assert state.stat().st_ino == inode and state.stat().st_mtime_ns == first
