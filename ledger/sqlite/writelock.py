"""The ledger's write lock: one writer at a time over every thread and process (decisions/0006).

A blocking ``flock`` on ``<data_dir>/tenure.lock`` taken before ``BEGIN IMMEDIATE`` and released
after COMMIT: a process waiting for another's commit sleeps in the kernel and wakes the moment the
lock is free, instead of SQLite's busy handler, which polls in milliseconds. ``flock`` does not
exclude the threads of one process, so a thread lock is taken first.
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


class WriteLock:
    """The write lock of the ledger in ``data_dir``; :meth:`held` takes it."""

    def __init__(self, data_dir: Path) -> None:
        self._fd = _open(data_dir / LOCK_NAME)
        self._thread_lock = threading.Lock()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block (no file lock where the file cannot be opened:
        a read-only ledger folder, where no write can happen anyway); the time it was held
        goes to ``tenure_sqlite_lock_held_seconds``."""
        with self._thread_lock:
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
        metrics.sqlite_lock_held(held)  # once let go: no writer waits for the metric

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
