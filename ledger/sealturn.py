"""Whose turn it is to seal a checkpoint for readers, across the worker processes of a host.

Readers may make the log sign and store a checkpoint at most once per ``SEAL_SPACING``
(``ledger/runtime.py``, issue 8 item 11). A bound kept in each process alone lets N workers seal
N a second — two workers racing for one tree size each sign it. The turn is shared instead:

- a SQLite folder: :class:`HostTurn`, an exclusive ``flock`` on ``<data>/run/seal.lock`` whose
  file holds the wall time of the last sealing; the kernel drops the lock of a process killed
  with -9, and the next turn reads the time it left;
- a PostgreSQL database: ``ledger/postgres/sealturn.py``'s ``DatabaseTurn``, an advisory lock
  for every node process of the database, the mark in a ``meta`` row;

A turn is taken off the event loop (``take`` blocks while another process holds it).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Protocol

TURN_FILE = "seal.lock"


class SealTurn(Protocol):
    """An exclusive turn to seal, carrying the wall time of the last one (seconds since the
    epoch, by the runtime's clock)."""

    def take(self) -> float:
        """Wait for the turn (blocking); the time the last sealing marked (0.0 if never)."""
        ...

    def give(self, sealed_at: float | None) -> None:
        """End the turn, marking the time this turn sealed (None: it sealed nothing)."""
        ...

    def close(self) -> None:
        """Let go of what the turn keeps open (the process stops serving)."""
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

    def close(self) -> None:
        pass  # each turn opens and closes its own file


def wait_before(sealed_at: float, spacing: float, now: float) -> float:
    """Seconds to wait so that ``spacing`` separates the last sealing from the next; never more
    than ``spacing`` (a wall clock stepped back must not stall readers)."""
    return max(0.0, min(spacing, sealed_at + spacing - now))
