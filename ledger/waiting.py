"""Rule 9's queues: callers blocked in `wait`, per resource, served first come first served.

Only bookkeeping lives here; the service decides, when a slot frees, whether the head of a queue
is granted (``LeaseService._serve_waiters``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from ledger.calls import Answer, LeaseCall

Key = tuple[str, str]
Granted = tuple[Answer, "asyncio.Future[None] | None"]


@dataclass(slots=True, eq=False)  # two waiters are never the same one, whatever they ask
class Waiter:
    call: LeaseCall
    future: asyncio.Future[Granted]


class WaitQueues:
    def __init__(self) -> None:
        self._queues: dict[Key, deque[Waiter]] = {}

    def join(self, key: Key, call: LeaseCall) -> Waiter:
        waiter = Waiter(call, asyncio.get_running_loop().create_future())
        self._queues.setdefault(key, deque()).append(waiter)
        return waiter

    def head(self, key: Key) -> Waiter | None:
        queue = self._queues.get(key)
        return queue[0] if queue else None

    def leave(self, key: Key, waiter: Waiter) -> None:
        queue = self._queues.get(key)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._queues[key]

    def count(self) -> int:
        """Callers waiting now, over every resource."""
        return sum(len(queue) for queue in self._queues.values())

    def resources_of(self, tenant: str) -> set[str]:
        return {name for owner, name in self._queues if owner == tenant}

    def cancel_all(self) -> None:
        """Shutdown or reload: nobody waiting will be granted by this state any more."""
        for queue in self._queues.values():
            for waiter in queue:
                waiter.future.cancel()
        self._queues.clear()
