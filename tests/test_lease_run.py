"""`tenure lease run` against a real server: renewal, exit codes, loss, signals (docs/client.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.lease_run import EXIT_LOST, EXIT_NOT_ACQUIRED, EXIT_USAGE
from tests.conftest import ROOT, Server, lease, rid

# The child writes the first signal it gets to $1, then exits 7 (or, with KEEP, carries on).
TRAPS = 'for s in INT TERM HUP; do trap "echo $s > $1; exit 7" $s; done; touch $1.up; '
KEEP = 'trap "echo TERM > $1" TERM; touch $1.up; '
SLEEP = "while :; do sleep 0.1 & wait $!; done"


def start(
    server: Server, resource: str, options: list[str], *command: str
) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "api", "lease", "run", resource, "--url", server.url, *options]
    return subprocess.Popen([*cmd, "--", *command], cwd=ROOT, stderr=subprocess.PIPE, text=True)


def outcome(server: Server, resource: str) -> str:
    with httpx.Client(base_url=server.url) as client:
        return str(lease(client, "get", resource=resource).json()["data"]["outcome"])


def wait_for(path: Path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_command_outliving_the_ttl_keeps_the_lease(server: Server, tmp_path: Path) -> None:
    resource, seen, receipts = rid("run"), tmp_path / "env", tmp_path / "receipts"
    script = 'echo "$TENURE_FENCING_TOKEN $TENURE_RESOURCE" > "$1"; sleep 3.5'
    options = ["--ttl", "1", "--receipts", str(receipts)]
    run = start(server, resource, options, "sh", "-c", script, "sh", str(seen))
    failing_resource = rid("fail")
    failing = start(server, failing_resource, [], "sh", "-c", "exit 3")  # meanwhile
    assert failing.wait(20) == 3  # the command's own status
    assert outcome(server, failing_resource) == "FREE"
    assert run.wait(20) == 0
    token, named = seen.read_text().split()
    assert named == resource and int(token) >= 1
    saved = sorted(receipts.iterdir())
    outcomes = [json.loads(path.read_text())["data"]["outcome"] for path in saved]
    assert outcomes[0] == "GRANTED" and outcomes[-1] == "RELEASED"
    assert outcomes.count("RENEWED") >= 6  # 3.5 s of a 1 s lease
    assert not any("own_" in path.read_text() for path in saved)  # no secret at rest
    assert outcome(server, resource) == "FREE"


def test_a_lost_lease_terminates_then_kills_the_command(server: Server, tmp_path: Path) -> None:
    resource, mark = rid("lost"), tmp_path / "mark"
    options = ["--ttl", "1", "--grace", "0.5"]
    run = start(server, resource, options, "sh", "-c", KEEP + SLEEP, "sh", str(mark))
    wait_for(Path(f"{mark}.up"))
    run.send_signal(signal.SIGSTOP)  # a paused worker: no renewals, the server expires it
    time.sleep(2.5)
    run.send_signal(signal.SIGCONT)
    assert run.wait(20) == EXIT_LOST
    assert mark.read_text().strip() == "TERM"  # SIGTERM first; it ignored it, so SIGKILL
    assert run.stderr is not None and "lease lost" in run.stderr.read()


def test_signals_reach_the_command(server: Server, tmp_path: Path) -> None:
    runs = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        resource, mark = rid("sig"), tmp_path / sig.name
        runs[sig] = (
            resource,
            mark,
            start(server, resource, [], "sh", "-c", TRAPS + SLEEP, "sh", str(mark)),
        )
    for sig, (_, mark, run) in runs.items():
        wait_for(Path(f"{mark}.up"))
        run.send_signal(sig)
    for sig, (resource, mark, run) in runs.items():
        assert run.wait(20) == 7  # the command's status: it handled the signal and exited
        assert mark.read_text().strip() == sig.name.removeprefix("SIG")
        assert outcome(server, resource) == "FREE"  # released after it ended


def test_sigint_reaches_the_command_when_tenure_started_with_it_ignored(
    server: Server, tmp_path: Path
) -> None:
    """A script's `tenure lease run … &` starts tenure with SIGINT ignored; the command must
    still start with the default disposition, so it can trap the SIGINT tenure forwards."""
    resource, mark = rid("bg"), tmp_path / "INT"
    cmd = [sys.executable, "-m", "api", "lease", "run", resource, "--url", server.url]
    ignoring = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *cmd]
    command = ["sh", "-c", TRAPS + SLEEP, "sh", str(mark)]
    run = subprocess.Popen([*ignoring, "--", *command], cwd=ROOT, stderr=subprocess.PIPE)
    wait_for(Path(f"{mark}.up"))
    run.send_signal(signal.SIGINT)
    assert run.wait(20) == 7  # the command trapped the forwarded SIGINT
    assert mark.read_text().strip() == "INT"
    assert outcome(server, resource) == "FREE"


def test_could_not_acquire_and_bad_usage(server: Server) -> None:
    resource = rid("held")
    with httpx.Client(base_url=server.url) as client:
        assert lease(client, "acquire", resource=resource, holder="other").status_code == 201
    held = start(server, resource, ["--holder", "me"], "true")
    assert held.wait(20) == EXIT_NOT_ACQUIRED
    assert held.stderr is not None and "HELD" in held.stderr.read()
    assert start(server, resource, []).wait(20) == EXIT_USAGE  # no command
    low = start(server, "deploy:prod", [], "true")  # anonymous tenant: the server refuses it
    assert low.wait(20) == EXIT_USAGE


def test_a_command_that_cannot_start_is_127_and_the_lease_released(server: Server) -> None:
    resource = rid("nocmd")
    missing = start(server, resource, [], str(ROOT / "no-such-command"))
    assert missing.wait(20) == 127
    assert missing.stderr is not None and "no-such-command" in missing.stderr.read()
    assert outcome(server, resource) == "FREE"
