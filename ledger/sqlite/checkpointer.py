"""WAL checkpoints outside the writers' critical section (docs/performance.md).

SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past its limit, holding
the ledger's write lock meanwhile. A storage that writes turns it off and runs a
:class:`Checkpointer` thread with a connection of its own: every ``every`` seconds a PASSIVE
checkpoint beside the writers, and past ``restart_frames`` frames a RESTART one under the
writers' lock, which starts the WAL over so the file stays bounded (``busy_timeout=0``: an old
reader's snapshot makes it answer busy, and the next round tries again). Durability does not
change: a commit is durable once its WAL frames are synced; a checkpoint only moves durable
pages into the database file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from ledger import metrics
from ledger.sqlite.schema import connect

logger = logging.getLogger("tenure.ledger")

EVERY = 0.25
"""Seconds between two background checkpoints. Every 0.05 s copied the pages that consecutive
commits dirty again (the trees' inner pages, the entries' last page) once per round and cost more
CPU per request than it saved; every 0.25 s the lock was held 39 µs less per event on average,
less in seven of eight alternated runs under wrk (docs/performance.md, seventh round)."""
RESTART_FRAMES = 16000
"""WAL frames (pages, 4 KB each) past which the checkpointer makes the WAL start over: ~64 MB.
A RESTART costs about the same under the lock whatever the WAL's length (on a grown ledger
~40–75 ms, ~100–130 on a page cache in large folios: 0046), mostly its sync of the pages
PASSIVE rounds copied, so a longer WAL means fewer of them: at 4,000 frames they held the lock
~15% of the time (docs/decisions/0045)."""


class Checkpointer:
    """Checkpoints one SQLite ledger from its own thread; ``exclusive`` is the writers' lock."""

    def __init__(
        self,
        path: Path,
        exclusive: Callable[[], AbstractContextManager[None]],
        *,
        every: float = EVERY,
        restart_frames: int = RESTART_FRAMES,
    ) -> None:
        self._conn = connect(path)
        self._conn.execute("PRAGMA busy_timeout=0")  # never wait for a reader (module doc)
        self._exclusive = exclusive
        self._every = every
        self._restart_frames = restart_frames
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> tuple[int, int, bool]:
        """One round: a PASSIVE checkpoint, then a RESTART under the writers' lock when the WAL
        is long. Returns the last one's (frames in the WAL, frames copied, busy: a reader still
        needed frames or another process's checkpoint was running, so the WAL was not started
        over; frames and copied are -1 when it could not even begin)."""
        (frames, copied, busy), took = self._checkpoint("PASSIVE")
        metrics.sqlite_checkpointed("passive", took)
        if frames >= self._restart_frames:
            with self._exclusive():
                (frames, copied, busy), took = self._checkpoint("RESTART")
            metrics.sqlite_checkpointed("restart", took)  # once the writers may go on
        return frames, copied, busy

    def start(self) -> None:
        """Run :meth:`run_once` every ``every`` seconds until :meth:`close`."""
        self._thread = threading.Thread(target=self._run, name="tenure-checkpointer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (after the round it is in) and close the connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._conn.close()

    def _checkpoint(self, mode: str) -> tuple[tuple[int, int, bool], float]:
        """A checkpoint of ``mode``: (frames, copied, busy) and the seconds it took."""
        started = time.perf_counter()
        busy, frames, copied = self._conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        return (int(frames), int(copied), bool(busy)), time.perf_counter() - started

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self.run_once()
            except sqlite3.Error as error:  # a full disk, say: the next round tries again
                logger.warning("WAL checkpoint failed: %s", error)
