"""Decoding the rows both storage backends select, in the same column order (no SQL here).

``ledger/sqlite/reads.py`` and ``ledger/postgres/reads.py`` each query their own database; what a
row of ``resources``, ``leases`` or ``waiters`` means is one thing, decoded here once.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.leases import Completion, Lease, Resource
from ledger.storage import WaiterRecord


def resource_row(row: Any) -> Resource:
    """``tenant, name, capacity, max_token, lifecycle_end, fingerprint, result, completed_at,
    completed_fingerprint`` → a Resource without its leases."""
    tenant, name, capacity, max_token, end, fingerprint, result, done_at, done_fp = row
    completion = None
    if done_at is not None:
        completion = Completion(json.loads(result), done_at, blob(done_fp))
    return Resource(tenant, name, capacity, max_token, end, blob(fingerprint), completion)


def lease_row(row: Any) -> Lease:
    """``holder, fencing_token, owner_digest, expires_at, scope, lease_id`` → a Lease."""
    holder, token, digest, expires, scope, lease_id = row
    return Lease(holder, token, bytes(digest), expires, scope, lease_id)


def waiter_row(row: Any) -> WaiterRecord:
    """``waiter_id, worker, call, answer`` (JSON texts) → a WaiterRecord."""
    answer = None if row[3] is None else json.loads(row[3])
    return WaiterRecord(row[0], row[1], json.loads(row[2]), answer)


def blob(value: bytes | None) -> bytes | None:
    """A driver's bytes-like value (memoryview, bytes) as bytes."""
    return None if value is None else bytes(value)
