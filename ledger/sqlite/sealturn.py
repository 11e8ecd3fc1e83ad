"""The seal turn of the worker processes of one host (``ledger/writer/sealturn.py``'s protocol).

An exclusive ``flock`` on ``<data>/run/seal.lock``, the file holding the wall time of the last
sealing: the kernel drops the lock of a process killed with -9, and the next turn reads the time
it left.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

TURN_FILE = "seal.lock"


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
