"""`tenure serve --workers N`: one parent, N worker processes on one listening socket (issue 10).

The parent has already migrated the ledger and set up the keys (``api/cli.py``); here it binds
the socket once, starts N workers — each ``tenure serve --fd FD`` running its own Runtime and
uvicorn on the inherited socket, taking connections so that they spread evenly over the workers
(``api/balance.py``) — restarts a
worker that dies, and on SIGTERM or SIGINT forwards the signal and waits for every worker to
finish its graceful shutdown. Workers die with the parent (``PR_SET_PDEATHSIG``): a parent
killed with -9 takes its workers with it, as one server would go.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from api.balance import Shares

PR_SET_PDEATHSIG = 1
RESTART_BACKOFF = 0.5


def listen(host: str, port: int) -> socket.socket:
    """Bind and listen, retrying a few seconds while an old server's workers still hold the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    deadline = time.monotonic() + 5
    while True:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        sock.listen(2048)
        sock.set_inheritable(True)
        return sock


def die_with_parent(parent: int) -> None:
    """In a worker: receive SIGKILL when the parent dies (and die now if it already has)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
METRICS_PREFIX = "tenure-metrics-"


@contextlib.contextmanager
def _metrics_folder() -> Iterator[None]:
    """prometheus-client's multiprocess mode for the workers: counters and histograms in
    memory-mapped files of one private, fresh folder, so that every worker's ``/metrics``
    answers the sum over all of them (a scrape reaches one worker at random). An operator's own
    ``PROMETHEUS_MULTIPROC_DIR`` is used as given (emptied at start, as its docs ask)."""
    if os.environ.get(METRICS_ENV):
        yield
        return
    _remove_stale_metrics()
    folder = tempfile.mkdtemp(prefix=f"{METRICS_PREFIX}{os.getpid()}-")  # 0700, this run's only
    os.environ[METRICS_ENV] = folder
    try:
        yield
    finally:
        del os.environ[METRICS_ENV]
        shutil.rmtree(folder, ignore_errors=True)


def _remove_stale_metrics() -> None:
    """Folders of parents that died without cleaning up (kill -9): their pid no longer runs."""
    for folder in Path(tempfile.gettempdir()).glob(METRICS_PREFIX + "*-*"):
        pid = folder.name[len(METRICS_PREFIX) :].partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


class Workers:
    """The parent's loop: keep ``count`` workers running until told to stop. Each worker has a
    slot of the shared connection counts (``api/balance.py``); a worker started again after one
    died takes the dead one's slot."""

    def __init__(self, argv: list[str], sock: socket.socket, count: int) -> None:
        fd = sock.fileno()
        self._shares = Shares.create(count)
        self._cmd = [sys.executable, "-m", "api", "serve", *argv, "--fd", str(fd)]
        self._cmd += ["--parent", str(os.getpid()), "--shares", str(self._shares.fd)]
        self._fd = fd
        self._count = count
        self._children: dict[int, tuple[subprocess.Popen[bytes], int]] = {}
        self._stopping: int | None = None

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; 0 once every worker has shut down."""
        with _metrics_folder():
            return self._run()

    def _run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._hang_up)
        for slot in range(self._count):
            self._spawn(slot)
        while self._children:
            pid, status = os.wait()
            ended = self._children.pop(pid, None)
            if ended is None:
                continue
            slot = ended[1]
            self._shares.set(slot, -1)  # its connections died with it
            if self._stopping is not None:
                continue
            print(f"tenure: worker {pid} ended ({status}); starting another", file=sys.stderr)
            time.sleep(RESTART_BACKOFF)
            if self._stopping is None:
                self._spawn(slot)
        return 0

    def _spawn(self, slot: int) -> None:
        cmd = [*self._cmd, "--slot", str(slot)]
        child = subprocess.Popen(cmd, pass_fds=(self._fd, self._shares.fd))
        self._children[child.pid] = (child, slot)

    def _hang_up(self, signum: int, frame: FrameType | None) -> None:
        """SIGHUP reloads the signing key (``tenure keys rotate``): every worker does it."""
        for child, _ in list(self._children.values()):
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGHUP)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = signum
        for child, _ in list(self._children.values()):
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGTERM)
