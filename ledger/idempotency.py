"""Rule 12's memory: the answers to requests that changed state, by (tenant, requestId), for 24 h.

Only answers that applied a change are remembered (docs/decisions/0004): a refusal is not, so a
retry after ``HELD`` is a new attempt. The stored answer never holds the owner token.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any

from ledger.changes import ForgetRequests, RememberRequest
from ledger.leases import Outcome

Key = tuple[str, str]


@dataclass(slots=True)
class Remembered:
    digest: bytes
    data: dict[str, Any]
    outcome: Outcome
    created_at: int


class RequestMemory:
    """The remembered answers, plus a heap by age so forgetting touches only the expired ones."""

    def __init__(self, stored: dict[Key, tuple[bytes, dict[str, Any], int]]) -> None:
        self._known = {
            key: Remembered(digest, data, Outcome(data["outcome"]), created)
            for key, (digest, data, created) in stored.items()
        }
        self._by_age = [(seen.created_at, *key) for key, seen in self._known.items()]
        heapq.heapify(self._by_age)

    def get(self, tenant: str, request_id: str) -> Remembered | None:
        return self._known.get((tenant, request_id))

    def remember(
        self, tenant: str, request_id: str, digest: bytes, data: dict[str, Any], now: int
    ) -> RememberRequest:
        self._known[(tenant, request_id)] = Remembered(digest, data, Outcome(data["outcome"]), now)
        heapq.heappush(self._by_age, (now, tenant, request_id))
        return RememberRequest(tenant, request_id, digest, json.dumps(data), now)

    def forget_before(self, horizon: int) -> ForgetRequests | None:
        forgot = False
        while self._by_age and self._by_age[0][0] < horizon:
            created, tenant, request_id = heapq.heappop(self._by_age)
            seen = self._known.get((tenant, request_id))
            if seen is not None and seen.created_at == created:
                del self._known[(tenant, request_id)]
                forgot = True
        return ForgetRequests(horizon) if forgot else None
