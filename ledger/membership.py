"""Membership: which worker processes share a ledger, who leads, how one wakes another's waiter.

The runtime needs three things of the processes that serve one ledger (docs/decisions/0006 and
0009): **liveness** (a dead worker's waiters are purged), **leadership** (the sweeper, the
dead-man switch, the sealer and that purge run in one process at a time, taken over when it
dies) and **wake-ups** (the process that granted another's waiter tells it, after the commit; a
lost wake-up costs latency only, as every waiter re-checks its row at its deadline).

Each backend offers one, opened by ``ledger/backends.py``: ``ledger/sqlite/cluster.py`` (the
host's ``flock`` files and abstract unix sockets), ``ledger/postgres/membership.py`` (session
advisory locks and ``NOTIFY``, so workers of several hosts share one ledger).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


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
