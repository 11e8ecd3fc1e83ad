"""`tenure serve` refuses bad options and a taken address before anything starts, and its
parent gives up on workers that cannot start (exit 1, their error) instead of restarting them
forever: real processes, real sockets."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.workers import Backoff
from tests.conftest import ROOT, lease, rid

BAD_OPTIONS = [
    (["--rate-limit", "-1"], "--rate-limit"),
    (["--lifecycle", "0"], "--lifecycle"),
    (["--port", "70000"], "--port"),
    (["--ttl-max", "0"], "--ttl-max"),
    (["--ttl-max", "90000"], "--ttl-max"),
    (["--workers", "0"], "--workers"),
    (["--checkpoint-interval", "0"], "--checkpoint-interval"),
    (["--read-timeout", "0"], "--read-timeout"),
    (["--max-header-bytes", "10"], "--max-header-bytes"),
    (["--log-level", "loud"], "--log-level"),
    (["--host", "no-such-host.invalid"], "--host"),
]


def serve(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`tenure serve` in ``cwd`` (so its default data/ and keys/ would land there)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    cmd = [sys.executable, "-m", "api", "serve", *args]
    return subprocess.Popen(cmd, cwd=cwd, env=environment, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str]:
    """Exit status and stderr; a server still running after ``timeout`` is killed and fails."""
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        pytest.fail(f"tenure serve was still running after {timeout} s: {err[-2000:]}")
    return process.returncode, err


@pytest.mark.parametrize(("args", "option"), BAD_OPTIONS)
def test_a_bad_option_is_exit_2_naming_it_and_nothing_is_created(
    tmp_path: Path, args: list[str], option: str
) -> None:
    status, err = finished(serve(tmp_path, "--port", "0", *args), timeout=20)
    assert status == 2, err
    assert option in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == []  # no data/, no keys/


def test_a_setting_from_the_environment_is_named_as_its_variable(tmp_path: Path) -> None:
    env = {"TENURE_SWEEP_INTERVAL": "0"}
    status, err = finished(serve(tmp_path, "--port", "0", env=env), timeout=20)
    assert status == 2 and "TENURE_SWEEP_INTERVAL" in err and "Traceback" not in err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_taken_port_is_exit_3_with_a_message_and_nothing_is_created(
    tmp_path: Path, workers: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        status, err = finished(serve(tmp_path, "--port", port, "--workers", workers))
    assert status == 3, err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == []


def test_help_shows_every_default() -> None:
    cmd = [sys.executable, "-m", "api", "serve", "--help"]
    shown = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    flat = " ".join(shown.split())
    for default in ("8080", "127.0.0.1", "10000.0", "3600", "86400", "16384"):
        assert f"(default: {default})" in flat
    assert "(default: None)" not in flat and "(default: False)" not in flat


def test_a_worker_that_cannot_start_stops_the_server_with_its_error(tmp_path: Path) -> None:
    """A dependency that breaks at import in the workers only (as a wheel missing a module
    did): exit 1 naming the error, not a restart loop."""
    broken = tmp_path / "shadow" / "uvloop"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("uvloop is broken here")\n')
    env = {"PYTHONPATH": f"{broken.parent}{os.pathsep}{ROOT}"}
    status, err = finished(serve(tmp_path, "--port", "0", "--workers", "2", env=env))
    assert status == 1
    assert re.search(r"worker \d+ could not start: ImportError: uvloop is broken here", err)
    assert "starting another" not in err


class Log:
    """A running server's stderr, read by a thread as it comes (the pipe never fills)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            self.lines.append(line)
            self._new.put(line)
        self._new.put(None)

    def whole(self, timeout: float = 20) -> str:
        """Everything the server wrote, once it has closed stderr (ended)."""
        self._reader.join(timeout)
        return "".join(self.lines)

    def url(self, timeout: float = 60) -> str:
        """The URL of the line ``tenure: serving URL (…)``; fails if none comes in time."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._new.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no URL printed within {timeout} s: {''.join(self.lines)[-2000:]}")
            if line is None:
                pytest.fail(f"the server ended without printing its URL: {''.join(self.lines)}")
            found = re.match(r"tenure: serving (http://\S+) \(", line)
            if found:
                return found.group(1)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Log]]:
    """A two-worker server on a free port, the URL it printed once both served, its log."""
    process = serve(tmp_path, "--port", "0", "--workers", "2")
    log = Log(process)
    try:
        yield process, log.url(), log
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)


def test_several_workers_print_the_url_and_answer_on_it(
    running: tuple[subprocess.Popen[str], str, Log],
) -> None:
    process, url, _ = running
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.head("/healthz").status_code == 200
        granted = lease(client, "acquire", resource=rid(), holder="w", ttlSeconds=30)
        assert granted.status_code == 201
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0


def workers_of(process: subprocess.Popen[str]) -> set[int]:
    found = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True)
    return {int(pid) for pid in found.stdout.split()}


def replaced(process: subprocess.Popen[str], gone: int) -> int:
    """Kill worker ``gone``; the pid of the worker started in its place."""
    before = workers_of(process) - {gone}
    os.kill(gone, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while not (workers_of(process) - before - {gone}):
        assert time.monotonic() < deadline, "the killed worker was not replaced"
        time.sleep(0.05)
    return (workers_of(process) - before - {gone}).pop()


def test_a_worker_that_keeps_dying_is_restarted_later_each_time(
    running: tuple[subprocess.Popen[str], str, Log],
) -> None:
    process, _, log = running
    first = min(workers_of(process))
    second = replaced(process, first)
    replaced(process, second)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)
    delays = re.findall(r"ended \(status -9\); starting another in ([\d.]+) s", log.whole())
    assert [float(d) for d in delays] == [0.5, 1.0]


def test_backoff_doubles_up_to_its_cap_and_starts_over_after_a_quiet_spell() -> None:
    backoff = Backoff(first=0.5, cap=4.0, reset=60.0)
    now = 1000.0
    delays = []
    for _ in range(6):
        delays.append(backoff.next(now))
        now += 5
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.next(now + 61) == 0.5
