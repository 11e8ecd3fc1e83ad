"""The state tables as they were before names were sealed, for the migration that seals them.

Both backends' step (docs/decisions/0010) selects every clear row in :data:`CLEAR_COLUMNS`
order and writes it again through the backend's own translation of :func:`clear_changes`.
History only: a ledger written since holds no such row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ledger.changes import (
    AddWaiter,
    ArmDeadMan,
    Change,
    GrantWaiter,
    PutLease,
    PutResource,
    RememberRequest,
)

CLEAR_COLUMNS = {
    "resources": "tenant, name, capacity, max_token, lifecycle_end, fingerprint, result,"
    " completed_at, completed_fingerprint",
    "leases": "tenant, resource, fencing_token, holder, owner_digest, expires_at, scope, lease_id",
    "idempotency": "tenant, request_id, request_digest, answer, created_at",
    "scopes": "tenant, scope, dead_ms, last_beat",
    "waiters": "waiter_id, tenant, resource, worker, call, answer",
}
"""The clear state tables before names were sealed, as the migration reads them (``waiters``
ordered by ``seq``)."""


def clear_changes(table: str, rows: Iterable[Sequence[Any]]) -> Iterator[Change]:
    """The changes that write ``rows`` of a clear ``table`` (:data:`CLEAR_COLUMNS`) again:
    the migration that seals names replays them through the backend's own translation."""
    kinds: dict[str, Any] = {
        "resources": PutResource,
        "leases": PutLease,
        "idempotency": RememberRequest,
        "scopes": ArmDeadMan,
    }
    for row in rows:
        if table != "waiters":
            yield kinds[table](*(bytes(v) if isinstance(v, memoryview) else v for v in row))
            continue
        yield AddWaiter(*row[:5])
        if row[5] is not None:
            yield GrantWaiter(row[0], row[5])
