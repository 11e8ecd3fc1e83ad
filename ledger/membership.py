"""Membership: which worker processes share a ledger, who leads, how one wakes another's waiter.

The runtime needs three things of the processes that serve one ledger (docs/decisions/0006 and
0009): **liveness** (a dead worker's waiters are purged), **leadership** (the sweeper, the
dead-man switch, the sealer and that purge run in one process at a time, taken over when it
dies) and **wake-ups** (the process that granted another's waiter tells it, after the commit; a
lost wake-up costs latency only, as every waiter re-checks its row at its deadline).

Two implementations, chosen by where the ledger lives (:func:`open_membership`):

- a SQLite folder: :class:`ledger.cluster.Cluster` — ``flock`` files and abstract unix sockets
  of the one host;
- a PostgreSQL database: :class:`ledger.postgres.membership.PostgresMembership` — session
  advisory locks and ``NOTIFY``, so workers of several hosts (nodes) share one ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ledger.sealturn import TURN_FILE, HostTurn, SealTurn
from ledger.storage import is_database_url


class Membership(Protocol):
    """This process's membership among the processes serving one ledger."""

    worker: str
    """This process's id in the ``waiters`` table."""

    @property
    def leader(self) -> bool:
        """Whether this process led at its last :meth:`try_lead`."""
        ...

    def try_lead(self) -> bool:
        """Keep or take the lead if it is free; whether this process leads now. Blocking (the
        runtime calls it off the event loop); never raises for a lost database."""
        ...

    def listen(self, loop: asyncio.AbstractEventLoop, wake: Callable[[str], None]) -> None:
        """Call ``wake(waiter_id)`` on ``loop`` for every wake-up sent to this process."""
        ...

    def notify(self, worker: str, waiter_id: str) -> None:
        """Tell ``worker`` its waiter was granted (after the commit; any thread; best effort)."""
        ...

    def dead(self, workers: list[str]) -> list[str]:
        """Those of ``workers`` known to be gone (their waiters may be purged); when in doubt,
        a worker is not dead."""
        ...

    def close(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Leave: give up the lead, stop listening, drop this process's liveness."""
        ...


def open_membership(data_dir: Path, database: str | None, keys: str) -> Membership:
    """The membership of the ledger at ``database`` (a ``postgresql://`` URL) or else of the
    SQLite folder ``data_dir``. ``keys``: this process's keys fingerprint
    (``keyring.keys_fingerprint``); a node whose keys folder differs from the one the database
    was first served with is refused (a :class:`~ledger.storage.StorageError`)."""
    if database is not None and is_database_url(database):
        from ledger.postgres.membership import PostgresMembership

        return PostgresMembership(database, keys)
    from ledger.cluster import Cluster

    return Cluster(data_dir, keys)


def open_seal_turn(data_dir: Path, database: str | None) -> SealTurn:
    """The turn to seal checkpoints for readers (``ledger/sealturn.py``): shared by the worker
    processes of a SQLite folder, by every node process of a PostgreSQL database."""
    if database is not None and is_database_url(database):
        from ledger.postgres.sealturn import DatabaseTurn

        return DatabaseTurn(database)
    from ledger.cluster import RUN_DIR

    return HostTurn(data_dir / RUN_DIR / TURN_FILE)
