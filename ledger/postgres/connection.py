"""Connections to the ledger's PostgreSQL database: settings every session gets, the reader of
the loop thread (reconnecting after the server restarts), and URLs safe to print."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from ledger.location import is_database_url, redact
from ledger.storage import StorageError

Conn = psycopg.Connection[Any]
Cursor = psycopg.Cursor[Any]
__all__ = ["Conn", "Cursor", "Reader", "configure", "connect", "is_database_url", "redact"]
T = TypeVar("T")

CONNECT_TIMEOUT = 5
"""Seconds to wait for the server to accept a connection before the storage is unavailable."""


def configure(conn: Conn) -> None:
    """Every session commits durably (a commit returns once the WAL is flushed), whatever the
    server's or the database's default says."""
    conn.execute("SET synchronous_commit TO on")


def connect(url: str) -> Conn:
    """A new autocommit session: each statement outside an explicit transaction commits alone."""
    conn = psycopg.connect(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name="tenure"
    )
    configure(conn)
    return conn


RECONNECT_PAUSE = 1.0
"""Seconds after a failed connection during which reads fail at once instead of trying again:
the loop thread reads through :class:`Reader` and must not stall on an unreachable server."""


class Reader:
    """The connection the loop thread reads through. A read that fails on a connection the
    server dropped (a restart, a fail-over) is tried once more on a new one; otherwise any
    database error is a :class:`StorageError` (503 ``unknown`` at the HTTP edge)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: Conn | None = None
        self._lock = threading.Lock()
        self._pause_until = 0.0

    def run(self, read: Callable[[Conn], T]) -> T:
        with self._lock:
            for _ in range(2):
                stale = self._conn is not None
                try:
                    return read(self._connection())
                except psycopg.OperationalError as error:
                    self.close()
                    if not stale:
                        raise StorageError(
                            f"the ledger database is unreachable: {error}"
                        ) from error
                except psycopg.Error as error:
                    raise StorageError(f"the ledger database refused a read: {error}") from error
            raise AssertionError("unreachable")

    def _connection(self) -> Conn:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        if time.monotonic() < self._pause_until:
            raise psycopg.OperationalError("the last connection attempt failed; retrying soon")
        try:
            self._conn = connect(self._url)
        except psycopg.OperationalError:
            self._pause_until = time.monotonic() + RECONNECT_PAUSE
            raise
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
