"""`tenure serve --workers N`: one parent, N worker processes on one listening socket.

The parent (``api/serve_cli.py``) has checked the options, bound the socket and set up the
ledger and keys; here it starts N workers (``tenure serve --fd FD``, each with its own Runtime
and uvicorn, spreading connections evenly: ``api/balance.py``). Each tells the parent over a pipe
when it serves, or why it could not start. Until all have served once, a worker that ends is
fatal (exit 1 with its error: a broken install must not restart forever); later ones are
replaced after a growing delay (``Backoff``). SIGTERM/SIGINT is forwarded and the parent waits
for every graceful shutdown. Workers die with the parent (``PR_SET_PDEATHSIG``), as one server.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from api.balance import Shares

PR_SET_PDEATHSIG = 1
READY = b"ready\n"


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


class Backoff:
    """The delay before replacing a worker that died: ``first`` seconds, doubled for each crash
    within ``reset`` seconds of the one before, at most ``cap``."""

    def __init__(self, first: float = 0.5, cap: float = 30.0, reset: float = 60.0) -> None:
        self._first, self._cap, self._reset = first, cap, reset
        self._delay = first
        self._last: float | None = None

    def next(self, now: float) -> float:
        """The delay for a crash at ``now`` (monotonic seconds)."""
        if self._last is None or now - self._last > self._reset:
            self._delay = self._first
        else:
            self._delay = min(self._cap, self._delay * 2)
        self._last = now
        return self._delay


class Report:
    """A worker's word to its parent over the inherited pipe: ready, or why it could not start."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd
        self._ready = False

    def ready(self) -> None:
        self._ready = True
        self._send(READY)

    def failed(self, error: BaseException | None) -> None:
        """Before it was ready, the worker ends: say why (nothing once it has served)."""
        if self._ready:
            return
        if error is None or isinstance(error, SystemExit):
            why = "its application did not start (see the log above)"
        else:
            why = f"{type(error).__name__}: {error}"
        self._send(why.replace("\n", " ").encode()[:2000] + b"\n")

    def _send(self, line: bytes) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.write(self._fd, line)


def url_of(host: str, sock: socket.socket, https: bool = False) -> str:
    """The URL the server answers on (the bound port, for ``--port 0``)."""
    port = sock.getsockname()[1]
    scheme = "https" if https else "http"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def announce(url: str, count: int) -> None:
    """The line an operator looks for once every worker serves."""
    processes = "in-process" if count == 1 else f"{count} workers"
    print(f"tenure: serving {url} ({processes}; Ctrl+C stops)", file=sys.stderr, flush=True)


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    slot: int
    pipe: int
    said: bytes = b""
    ready: bool = False


class Workers:
    """The parent's loop: keep ``count`` workers running until told to stop. Each worker has a
    slot of the shared connection counts (``api/balance.py``); a worker started again after one
    died takes the dead one's slot."""

    def __init__(self, argv: list[str], sock: socket.socket, count: int, url: str) -> None:
        fd = sock.fileno()
        self._shares = Shares.create(count)
        self._cmd = [sys.executable, "-m", "api", "serve", *argv, "--fd", str(fd)]
        self._cmd += ["--parent", str(os.getpid()), "--shares", str(self._shares.fd)]
        self._fd, self._count, self._url = fd, count, url
        self._children: dict[int, _Child] = {}  # by pipe
        self._pending: list[tuple[float, int]] = []  # (when, slot) of replacements
        self._backoff = Backoff()
        self._selector = selectors.DefaultSelector()
        self._stopping: int | None = None
        self._all_served = False
        self._failed = False

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT: 0 once every worker has shut down, 1 if one could not
        start."""
        with _metrics_folder():
            return self._run()

    def _run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._hang_up)
        for slot in range(self._count):
            self._spawn(slot)
        while self._children or (self._pending and self._stopping is None):
            for key, _ in self._selector.select(self._timeout()):
                self._heard(self._children[key.fd])
            self._start_due()
        return 1 if self._failed else 0

    def _timeout(self) -> float:
        if not self._pending or self._stopping is not None:
            return 0.5  # a signal's flag is looked at at least this often
        return max(0.0, min(0.5, self._pending[0][0] - time.monotonic()))

    def _start_due(self) -> None:
        while self._pending and self._stopping is None and self._pending[0][0] <= time.monotonic():
            self._spawn(self._pending.pop(0)[1])

    def _heard(self, child: _Child) -> None:
        """A worker wrote to its pipe, or closed it by ending."""
        data = os.read(child.pipe, 4096)
        child.said += data
        if not child.ready and child.said.startswith(READY):
            child.ready = True
            if not self._all_served and all(c.ready for c in self._children.values()):
                self._all_served = True
                announce(self._url, self._count)
        if not data:
            self._ended(child)

    def _ended(self, child: _Child) -> None:
        self._selector.unregister(child.pipe)
        os.close(child.pipe)
        del self._children[child.pipe]
        status = child.process.wait()
        self._shares.set(child.slot, -1)  # its connections died with it
        if self._stopping is not None:
            return
        pid = child.process.pid
        if not self._all_served:
            why = child.said.decode(errors="replace").strip() or f"exit status {status}"
            print(f"tenure: worker {pid} could not start: {why}", file=sys.stderr, flush=True)
            self._failed = True
            self._stop(signal.SIGTERM, None)
            return
        delay = self._backoff.next(time.monotonic())
        print(
            f"tenure: worker {pid} ended (status {status}); starting another in {delay:g} s",
            file=sys.stderr,
            flush=True,
        )
        self._pending.append((time.monotonic() + delay, child.slot))

    def _spawn(self, slot: int) -> None:
        pipe, end = os.pipe()
        cmd = [*self._cmd, "--slot", str(slot), "--ready", str(end)]
        try:
            child = subprocess.Popen(cmd, pass_fds=(self._fd, self._shares.fd, end))
        finally:
            os.close(end)
        self._children[pipe] = _Child(child, slot, pipe)
        self._selector.register(pipe, selectors.EVENT_READ)

    def _hang_up(self, signum: int, frame: FrameType | None) -> None:
        """SIGHUP reloads the signing key (``tenure keys rotate``): every worker does it."""
        for child in list(self._children.values()):
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGHUP)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = signum
        for child in list(self._children.values()):
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)
