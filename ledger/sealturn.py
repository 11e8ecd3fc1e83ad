"""Whose turn it is to seal a checkpoint for readers, across the worker processes of a host.

Readers may make the log sign and store a checkpoint at most once per ``SEAL_SPACING``
(``ledger/runtime.py``, issue 8 item 11). A bound kept in each process alone lets N workers seal
N a second — two workers racing for one tree size each sign it. The turn is shared instead:

- a SQLite folder: :class:`HostTurn`, an exclusive ``flock`` on ``<data>/run/seal.lock`` whose
  file holds the wall time of the last sealing; the kernel drops the lock of a process killed
  with -9, and the next turn reads the time it left;
- a PostgreSQL database: :class:`ProcessTurn`, this process's alone (each node process keeps
  the bound for its own readers; a turn across hosts would need a lock in the database).

A turn is taken off the event loop (``take`` blocks while another process holds it).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from typing import Protocol

TURN_FILE = "seal.lock"


class SealTurn(Protocol):
    """An exclusive turn to seal, carrying the wall time (``time.time()``) of the last one."""

    def take(self) -> float:
        """Wait for the turn (blocking); the time the last sealing marked (0.0 if never)."""
        ...

    def give(self, sealed_at: float | None) -> None:
        """End the turn, marking the time this turn sealed (None: it sealed nothing)."""
        ...


class HostTurn:
    """The turn among every process of this host serving the folder of ``path``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def take(self) -> float:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mark = os.pread(fd, 64, 0).strip()
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        try:
            return float(mark or b"0")
        except ValueError:  # a torn write of a process that died mid-way: as if never
            return 0.0

    def give(self, sealed_at: float | None) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if sealed_at is not None:
                os.pwrite(fd, repr(sealed_at).encode().ljust(32), 0)
        finally:
            os.close(fd)  # and with it the lock


class ProcessTurn:
    """The turn among this process's own readers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sealed_at = 0.0

    def take(self) -> float:
        self._lock.acquire()
        return self._sealed_at

    def give(self, sealed_at: float | None) -> None:
        if sealed_at is not None:
            self._sealed_at = sealed_at
        self._lock.release()


def wait_before(sealed_at: float, spacing: float, now: float | None = None) -> float:
    """Seconds to wait so that ``spacing`` separates the last sealing from the next; never more
    than ``spacing`` (a wall clock stepped back must not stall readers)."""
    now = time.time() if now is None else now
    return max(0.0, min(spacing, sealed_at + spacing - now))
