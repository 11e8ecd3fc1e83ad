"""Rule 13's dead-man switches, indexed by deadline so the sweeper touches only those due.

A switch fires when `dead_ms` pass without a heartbeat. Each heartbeat pushes the new deadline
onto a heap; an older heap entry is recognised as stale when it is popped (lazy deletion), and
the heap is rebuilt when stale entries outnumber live ones, so its size stays proportional to the
armed switches however often they beat.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

Key = tuple[str, str]
_SLACK = 64


@dataclass(slots=True)
class DeadMan:
    dead_ms: int
    last_beat: int

    @property
    def deadline(self) -> int:
        return self.last_beat + self.dead_ms


class DeadMen:
    def __init__(self, armed: dict[Key, tuple[int, int]]) -> None:
        self._armed = {key: DeadMan(dead, beat) for key, (dead, beat) in armed.items()}
        self._due: list[tuple[int, str, str]] = []
        self._rebuild()

    def arm(self, key: Key, dead_ms: int, now: int) -> None:
        switch = self._armed[key] = DeadMan(dead_ms, now)
        heapq.heappush(self._due, (switch.deadline, *key))
        if len(self._due) > 4 * len(self._armed) + _SLACK:
            self._rebuild()

    def disarm(self, key: Key) -> None:
        self._armed.pop(key, None)  # its heap entries become stale

    def due(self, now: int) -> list[Key]:
        """The switches whose deadline has come (`now` ≥ last beat + deadSeconds), disarmed."""
        fired: list[Key] = []
        while self._due and self._due[0][0] <= now:
            deadline, tenant, scope = heapq.heappop(self._due)
            switch = self._armed.get((tenant, scope))
            if switch is not None and switch.deadline == deadline:
                fired.append((tenant, scope))
        return fired

    def _rebuild(self) -> None:
        self._due = [(switch.deadline, *key) for key, switch in self._armed.items()]
        heapq.heapify(self._due)
