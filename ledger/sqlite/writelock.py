"""The ledger's write lock: one writer at a time over every thread and process (decisions/0006).

A blocking ``flock`` on ``<data_dir>/tenure.lock`` taken before ``BEGIN IMMEDIATE`` and released
after COMMIT: a process waiting for another's commit sleeps in the kernel and wakes the moment the
lock is free, instead of SQLite's busy handler, which polls in milliseconds. ``flock`` does not
exclude the threads of one process, so a thread lock is taken first.

The lock can also be taken by one thread *for* another (:meth:`WriteLock.lend`) and let go by
either (:meth:`WriteLock.give_back`): the group committer's helper thread waits for it while the
event loop goes on reading requests, and the loop then writes its batch itself
(docs/decisions/0017). While it is lent, the borrowing thread's transactions do not take it again.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ledger import metrics

LOCK_NAME = "tenure.lock"
LENT_POLL_SECONDS = 0.005
"""How often a thread waiting for the lock looks whether it was lent to it meanwhile."""


class WriteLock:
    """The write lock of the ledger in ``data_dir``; :meth:`held` takes it."""

    def __init__(self, data_dir: Path) -> None:
        self._fd = _open(data_dir / LOCK_NAME)
        self._thread_lock = threading.Lock()
        self._lent: int | None = None
        """The thread the lock is held for (:meth:`lend`), if any."""
        self._taken = 0.0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block (no file lock where the file cannot be opened:
        a read-only ledger folder, where no write can happen anyway); the time it was held
        goes to ``tenure_sqlite_lock_held_seconds``. In the thread the lock is lent to, the
        block runs under that loan — also when it is lent while the thread waits here, so a
        write of the borrowing thread never waits for its own loan."""
        me = threading.get_ident()
        if self._lent == me:
            yield
            return
        while not self._thread_lock.acquire(timeout=LENT_POLL_SECONDS):
            if self._lent == me:
                yield
                return
        try:
            fd = self._fd
            if fd is None:
                yield
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            taken = time.perf_counter()
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                held = time.perf_counter() - taken
        finally:
            self._thread_lock.release()
        metrics.sqlite_lock_held(held)  # once let go: no writer waits for the metric

    def lend(self, thread: int) -> None:
        """Wait for the lock (from any thread) and hold it for ``thread`` (an ident) until
        :meth:`give_back`: ``thread``'s :meth:`held` blocks run under it meanwhile."""
        self._thread_lock.acquire()
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                self._thread_lock.release()
                raise
        self._taken = time.perf_counter()
        self._lent = thread

    def give_back(self) -> None:
        """Let go of a lent lock (from any thread)."""
        self._lent = None
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        held = time.perf_counter() - self._taken
        self._thread_lock.release()
        metrics.sqlite_lock_held(held)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _open(path: Path) -> int | None:
    """The lock file, or None where it cannot even be read (a read-only ledger folder without
    one: no write can happen there, and ``SQLiteStorage.check_writable`` says so)."""
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags, 0o600)
        except OSError:
            continue
    return None
