"""Several nodes on one PostgreSQL ledger: liveness, leadership and wake-ups (decisions/0009).

- **Liveness**: each worker holds a session advisory lock ``(LIVE_CLASS, n)`` for its life (its
  id is ``n`` in hex); the database drops it when the session ends, so a worker whose lock
  nobody holds is dead and the leader purges its waiters. No heartbeats, no clocks.
- **Leadership**: :class:`~ledger.postgres.leader.AdvisoryLeader`, another session lock.
- **Wake-ups**: ``NOTIFY tenure_wake_<worker>, '<waiter id>'`` after the granting commit; a lost
  one costs latency only (the waiter re-checks its row at its deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from collections.abc import Callable

import psycopg

from ledger.postgres.connection import Conn, connect, redact
from ledger.postgres.leader import AdvisoryLeader
from ledger.postgres.wakeup import Wakeups, channel
from ledger.storage import StorageError

logger = logging.getLogger("tenure.membership")

LIVE_CLASS = 0x7465_6E75  # "tenu": the first key of every worker's liveness lock
LEADER_KEY = 0x7465_6E75_7265_0003  # the leader's lock (sweeper, dead man, sealer, purge)
_LIVE = (
    "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND objsubid = 2 AND classid = %s::oid"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


class PostgresMembership:
    """This worker process's membership of the nodes serving the database at ``url``."""

    def __init__(self, url: str, keys: str) -> None:
        self._url = url
        self._lock = threading.Lock()  # the session is used from the loop's and writer's threads
        try:
            self._session: Conn | None = connect(url)
            try:
                _same_keys(self._session, keys)
                self.worker = self._claim(self._session)
            except BaseException:
                self._session.close()
                raise
        except psycopg.Error as error:
            raise StorageError(f"cannot join the nodes of {redact(url)}: {error}") from error
        self._leader = AdvisoryLeader(url, LEADER_KEY)
        self._wakeups: Wakeups | None = None

    @property
    def leader(self) -> bool:
        return self._leader.leading

    def try_lead(self) -> bool:
        """Renew this worker's liveness if its session was lost, then keep or take the lead."""
        self._keep_alive()
        return self._leader.try_lead()

    def listen(self, loop: asyncio.AbstractEventLoop, wake: Callable[[str], None]) -> None:
        """``LISTEN`` on this worker's channel; each payload wakes that waiter on ``loop``."""

        def woken(waiter_id: str) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while shutting down
                loop.call_soon_threadsafe(wake, waiter_id)

        self._wakeups = Wakeups(self._url, self.worker, woken)
        if not self._wakeups.start():
            logger.warning("not yet listening for wake-ups: waiters fall back to their deadline")

    def notify(self, worker: str, waiter_id: str) -> None:
        """``NOTIFY`` ``worker`` of its granted waiter, on this worker's session (best effort:
        a lost notification delays that waiter until its deadline)."""
        with self._lock, contextlib.suppress(psycopg.Error, ValueError):
            if self._session is not None and not self._session.closed:
                self._session.execute("SELECT pg_notify(%s, %s)", (channel(worker), waiter_id))

    def dead(self, workers: list[str]) -> list[str]:
        """Those of ``workers`` whose liveness lock no session holds; none if the database
        cannot say (a waiter is never purged on doubt)."""
        with self._lock:
            try:
                rows = self._live_session().execute(_LIVE, (LIVE_CLASS,)).fetchall()
            except psycopg.Error:
                self._drop()  # the next call, or the next leader round, reconnects
                return []
        live = {f"{int(row[0]):08x}" for row in rows}
        return [worker for worker in workers if worker != self.worker and worker not in live]

    def close(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if self._wakeups is not None:
            self._wakeups.close()
        self._leader.close()
        with self._lock:
            if self._session is not None:
                self._session.close()  # ends the session: the liveness lock goes with it
                self._session = None

    def _claim(self, session: Conn) -> str:
        """Take a liveness lock nobody holds; this worker's id."""
        while True:
            n = secrets.randbelow(2**31)
            row = session.execute("SELECT pg_try_advisory_lock(%s, %s)", (LIVE_CLASS, n))
            taken = row.fetchone()
            if taken and taken[0]:
                return f"{n:08x}"

    def _keep_alive(self) -> None:
        """If this worker's session died (the database restarted), take its liveness lock again
        on a new one. Meanwhile the leader may have purged its waiters: they fall back to their
        deadline's plain attempt (rule 8), never to a double grant."""
        with self._lock:
            try:
                self._live_session().execute("SELECT 1")
            except psycopg.Error:
                self._drop()
                with contextlib.suppress(psycopg.Error):
                    self._live_session()

    def _live_session(self) -> Conn:
        if self._session is None or self._session.closed:
            session = connect(self._url)
            row = session.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (LIVE_CLASS, int(self.worker, 16))
            ).fetchone()
            if not (row and row[0]):
                session.close()
                raise psycopg.OperationalError(f"worker {self.worker}'s liveness lock is taken")
            self._session = session
        return self._session

    def _drop(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _same_keys(session: Conn, keys: str) -> None:
    """Record the keys fingerprint of the first node to serve the database; refuse any node whose
    keys folder differs (its receipts, pseudonyms and waiters' owner tokens would not match)."""
    session.execute(
        "INSERT INTO meta(key, value) VALUES ('keys_fingerprint', %s) ON CONFLICT DO NOTHING",
        (keys,),
    )
    row = session.execute("SELECT value FROM meta WHERE key = 'keys_fingerprint'").fetchone()
    if row is None or row[0] != keys:
        raise StorageError(
            "this node's keys folder differs from the one this database is served with: every"
            " node must use the same keys folder contents (docs/postgres.md)"
        )
