"""Several worker processes on one ledger folder (docs/decisions/0006), by ``flock`` files under
``<data>/run/`` and abstract unix datagram sockets: the kernel drops a killed process's locks
and socket, so nothing is left behind.

- **Liveness**: each worker holds ``run/<worker>.lock`` for its life; a lock another process can
  take belongs to a dead worker.
- **Leader**: the worker holding ``run/leader.lock`` (retried each second) runs the sweeper, the
  checkpoint sealer and the purge of dead workers' waiters.
- **Wake-ups**: the granting process sends the waiter id to its worker's socket; a lost
  datagram costs latency only (every waiter re-checks its row at its deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path

from ledger.files import create_once
from ledger.storage import StorageError

RUN_DIR = "run"
LEADER_LOCK = "leader.lock"
KEYS_FILE = "keys.fingerprint"
"""Names the keys folder the ledger folder was first served with (``keyring.keys_fingerprint``)."""


class Cluster:
    """This process's membership of the ledger folder ``data_dir``; ``keys`` (the keys folder's
    fingerprint) is refused if the folder is bound to another (:func:`claim_keys`)."""

    def __init__(self, data_dir: Path, keys: str | None = None) -> None:
        if keys is not None:
            try:
                claim_keys(data_dir, keys)
            except ValueError as error:
                raise StorageError(str(error)) from error
        self.worker = secrets.token_hex(8)
        self._run = data_dir / RUN_DIR
        self._run.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._tag = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        self._alive = _lock_file(self._run / f"{self.worker}.lock")
        fcntl.flock(self._alive, fcntl.LOCK_EX)
        self._leader: int | None = None
        self._inbox: socket.socket | None = None
        self._outbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._outbox.setblocking(False)

    @property
    def leader(self) -> bool:
        return self._leader is not None

    def try_lead(self) -> bool:
        """Take the leader lock if nobody holds it; whether this worker leads now."""
        if self._leader is None:
            fd = _lock_file(self._run / LEADER_LOCK)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            self._leader = fd
        return True

    def listen(self, loop: asyncio.AbstractEventLoop, wake: Callable[[str], None]) -> None:
        """Call ``wake(waiter_id)`` on ``loop`` for every wake-up sent to this worker."""
        inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        inbox.bind(self._address(self.worker))
        inbox.setblocking(False)
        self._inbox = inbox

        def readable() -> None:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                while True:
                    wake(inbox.recv(256).decode())

        loop.add_reader(inbox.fileno(), readable)

    def notify(self, worker: str, waiter_id: str) -> None:
        """Tell ``worker`` its waiter was granted (from any thread; best effort)."""
        with contextlib.suppress(OSError):
            self._outbox.sendto(waiter_id.encode(), self._address(worker))

    def dead(self, workers: list[str]) -> list[str]:
        """Those of ``workers`` whose process is gone (their lock is free), forgotten."""
        found = []
        for worker in workers:
            if worker != self.worker and not _held(self._run / f"{worker}.lock"):
                found.append(worker)
        return found

    def close(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if self._inbox is not None:
            if loop is not None:
                loop.remove_reader(self._inbox.fileno())
            self._inbox.close()
        self._outbox.close()
        for fd in (self._leader, self._alive):
            if fd is not None:
                os.close(fd)
        self._leader = None
        with contextlib.suppress(FileNotFoundError):
            (self._run / f"{self.worker}.lock").unlink()

    def _address(self, worker: str) -> str:
        return f"\0tenure/{self._tag}/{worker}"


def serving(data_dir: Path) -> bool:
    """Whether a live worker process serves the ledger folder ``data_dir`` now."""
    run = data_dir / RUN_DIR
    if not run.is_dir():
        return False
    return any(lock_held(path) for path in run.glob("*.lock") if path.name != LEADER_LOCK)


def claim_keys(data_dir: Path, fingerprint: str) -> None:
    """Bind the ledger folder to the keys folder named by ``fingerprint`` (the first to claim it
    wins) and refuse another: its pseudonyms and names would not be this ledger's. Raises
    :class:`ValueError` saying so."""
    path = data_dir / KEYS_FILE
    if not path.exists():
        create_once(path, (fingerprint + "\n").encode(), 0o644)  # first wins, whole or not at all
    found = path.read_text(encoding="ascii").strip()
    if found != fingerprint:
        raise ValueError(
            f"the ledger in {data_dir} is served with another keys folder (fingerprint"
            f" {found[:12]}…, this one's {fingerprint[:12]}…): start with the keys folder it"
            " was first served with"
        )


def _lock_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def _held(path: Path) -> bool:
    """Whether a live process holds ``path``'s lock; a dead worker's file is removed."""
    if lock_held(path):
        return True
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return False


def lock_held(path: Path) -> bool:
    """Whether some open file holds an exclusive ``flock`` on ``path`` now (False if no file)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
