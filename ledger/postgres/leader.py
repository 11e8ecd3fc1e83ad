"""One node at a time for a background role (sweeper, dead-man switch, sealer), by advisory lock.

:class:`AdvisoryLeader` holds a session advisory lock on a connection of its own
(docs/decisions/0009): the database releases it when that session ends, and the next
:meth:`try_lead` of another node takes over; each call first checks its own session is alive.
Between a session's end and that check two nodes may both lead for one interval, so a role run
this way must be safe to run twice (it decides inside the write transaction, decisions/0005).
"""

from __future__ import annotations

import psycopg

from ledger.postgres.connection import Conn, connect


class AdvisoryLeader:
    """Leadership of the role ``key`` among the nodes of the database at ``url``."""

    def __init__(self, url: str, key: int) -> None:
        self._url = url
        self._key = key
        self._conn: Conn | None = None
        self.leading = False

    def try_lead(self) -> bool:
        """Whether this node leads now: keep the lock if its session lives, else try to take
        it. A database that cannot be reached means not leading (never an exception)."""
        try:
            conn = self._connection()
            if self.leading:
                conn.execute("SELECT 1")  # the lock lives exactly as long as this session
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
                self.leading = bool(row and row[0])
        except psycopg.Error:
            self._drop()
        return self.leading

    def resign(self) -> None:
        """Give the role up now (a clean shutdown), so another node need not wait."""
        if self._conn is not None and self.leading:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
            except psycopg.Error:
                self._drop()
        self.leading = False

    def close(self) -> None:
        self.resign()
        self._drop()

    def _connection(self) -> Conn:
        if self._conn is None or self._conn.closed:
            self.leading = False  # a new session holds nothing
            self._conn = connect(self._url)
        return self._conn

    def _drop(self) -> None:
        self.leading = False
        if self._conn is not None:
            self._conn.close()
            self._conn = None
