"""Rule 9's queues: callers blocked in `wait`, per resource, served first come first served.

The queues belong to the writer thread (docs/decisions/0006): a caller joins inside the
transaction that refused it ``HELD``, and every transaction that frees a slot serves the head of
the resource's queue in the same transaction. The event loop only creates a waiter's future and
awaits it; the writer sets ``granted`` and resolves the future after the commit. Memory holds
only live waiters.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from dataclasses import dataclass, field

from ledger.calls import Answer, LeaseCall

Key = tuple[str, str]


@dataclass(slots=True, eq=False)  # two waiters are never the same one, whatever they ask
class Waiter:
    call: LeaseCall
    future: asyncio.Future[Answer]
    waiter_id: str = field(default_factory=lambda: secrets.token_hex(16))
    granted: Answer | None = None
    """Set by the writer when a transaction grants this waiter a slot (before its commit)."""

    @property
    def key(self) -> Key:
        return (self.call.tenant, self.call.resource)

    @property
    def abandoned(self) -> bool:
        """The caller is gone (cancelled): grant it no slot."""
        return self.future.cancelled()


class WaitQueues:
    """Writer-thread only: nothing here is touched by the event loop."""

    def __init__(self) -> None:
        self._queues: dict[Key, deque[Waiter]] = {}

    def join(self, waiter: Waiter) -> None:
        self._queues.setdefault(waiter.key, deque()).append(waiter)

    def head(self, key: Key) -> Waiter | None:
        queue = self._queues.get(key)
        return queue[0] if queue else None

    def leave(self, waiter: Waiter) -> None:
        queue = self._queues.get(waiter.key)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._queues[waiter.key]

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def take_all(self) -> list[Waiter]:
        """Storage failed or the service stops: every waiter leaves, to be told so."""
        waiters = [waiter for queue in self._queues.values() for waiter in queue]
        self._queues.clear()
        return waiters
