"""The readers' seal turn among every node process of one PostgreSQL database.

``ledger/writer/sealturn.py`` explains the turn. Here it is a transaction-level advisory lock
(``pg_advisory_xact_lock``) on a session of this process's own, with the mark (the wall time of
the last sealing) in the ``meta`` row ``reader_sealed_at``, written in that same transaction:
the lock ends with the transaction or its session, and the next turn reads the mark. Hosts whose
clocks disagree wait at most ``SEAL_SPACING`` (``wait_before`` caps the wait).
"""

from __future__ import annotations

import threading

import psycopg

from ledger.postgres.connection import Conn, connect, redact
from ledger.storage import StorageError

SEAL_TURN_KEY = 0x7465_6E75_7265_0004  # "tenure" + 4: beside the migration and leader locks
MARK = "reader_sealed_at"


class DatabaseTurn:
    """The turn among every process serving the database at ``url`` (a ``SealTurn``)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: Conn | None = None
        self._local = threading.Lock()  # one turn at a time on this process's session

    def take(self) -> float:
        self._local.acquire()
        try:
            conn = self._session()
            conn.execute("BEGIN")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SEAL_TURN_KEY,))
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (MARK,)).fetchone()
        except BaseException as error:
            self._drop()
            self._local.release()
            if isinstance(error, psycopg.Error):
                raise StorageError(f"the seal turn at {redact(self._url)}: {error}") from error
            raise
        try:
            return float(row[0]) if row else 0.0
        except ValueError:  # not a time this code wrote: as if never
            return 0.0

    def give(self, sealed_at: float | None) -> None:
        """End the turn: the mark, if any, and the COMMIT that frees the lock."""
        conn = self._conn
        try:
            if conn is not None and sealed_at is not None:
                conn.execute(
                    "INSERT INTO meta VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (MARK, repr(sealed_at)),
                )
            if conn is not None:
                conn.execute("COMMIT")
        except psycopg.Error:
            self._drop()  # the session's end gives the lock back; the mark is lost with it
        finally:
            self._local.release()

    def close(self) -> None:
        self._drop()

    def _session(self) -> Conn:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._url)
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
