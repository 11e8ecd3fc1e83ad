"""Waking a waiter on another node: PostgreSQL ``NOTIFY`` sent from the granting transaction.

Blocking waits across nodes (docs/decisions/0009): each worker process listens on a channel of its
own (``tenure_wake_<worker>``, ``ledger/postgres/membership.py``). The process that granted a
waiter's lease sends the waiter id after the granting commit (the membership's ``notify``, as the
SQLite side does); :func:`notify` does it inside a write transaction instead, delivered only if —
and once — that transaction commits. :class:`Wakeups` runs one
thread that ``LISTEN``s and hands each payload (a waiter id) to a callback; after a dropped
connection it reconnects and listens again. A notification lost meanwhile costs latency only:
a waiter re-checks its row at its deadline.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

import psycopg
from psycopg import sql

from ledger.postgres.connection import Conn, connect

logger = logging.getLogger("tenure.wakeups")
_NODE = re.compile(r"[0-9a-z_]{1,40}")


def channel(node: str) -> str:
    """The channel a node listens on; ``node`` is a short lower-case id (not user input)."""
    if not _NODE.fullmatch(node):
        raise ValueError(f"node id must match {_NODE.pattern}, got {node!r}")
    return f"tenure_wake_{node}"


def notify(conn: Conn, node: str, waiter_id: str) -> None:
    """Inside the caller's write transaction: wake ``waiter_id`` on ``node`` once it commits."""
    conn.execute("SELECT pg_notify(%s, %s)", (channel(node), waiter_id))


class Wakeups:
    """This node's listener: ``on_wake(waiter_id)`` runs on the listener thread for each one."""

    def __init__(self, url: str, node: str, on_wake: Callable[[str], None]) -> None:
        self._url = url
        self._channel = channel(node)
        self._on_wake = on_wake
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tenure-wakeups", daemon=True)

    def start(self, timeout: float = 5.0) -> bool:
        """Start listening; whether ``LISTEN`` took effect within ``timeout`` seconds."""
        self._thread.start()
        return self._listening.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with connect(self._url) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                    self._listening.set()
                    self._deliver(conn)
            except psycopg.OperationalError:
                self._listening.clear()
                self._stop.wait(0.5)  # the database is away: try again shortly

    def _deliver(self, conn: Conn) -> None:
        while not self._stop.is_set():
            for note in conn.notifies(timeout=0.2):
                try:
                    self._on_wake(note.payload)
                except Exception:  # one bad callback must not deafen the node
                    logger.exception("waking waiter %s failed", note.payload)
