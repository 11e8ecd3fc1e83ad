"""Decoding the rows both storage backends select, in the same column order (no SQL here).

``ledger/sqlite/reads.py`` and ``ledger/postgres/reads.py`` each query their own database; what a
row of ``resources``, ``leases`` or ``waiters`` means is one thing, decoded here once. (SQLite keeps
resources and their leases as rows of one table, ``state``, docs/decisions/0013; its reads hand
each row here in the shape of :data:`RESOURCE_COLUMNS` or :data:`LEASE_COLUMNS`.) Names and
stored answers come back out of their sealed columns (``ledger/keys/sealing.py``,
docs/decisions/0010).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ledger.keys import sealing
from ledger.keys.names import NameCodec
from ledger.lease.leases import Completion, Lease, Resource
from ledger.storage import DAMAGED, CheckpointRecord, Listed, StorageError, WaiterRecord

RESOURCE_COLUMNS = (
    "tenant, name, capacity, max_token, lifecycle_end, fingerprint, result, completed_at,"
    " completed_fingerprint"
)
LEASE_COLUMNS = "tenant, resource, sealed, fencing_token, owner_digest, expires_at, lease_id"
WAITER_COLUMNS = "waiter_id, worker, call, answer"
CHECKPOINT_COLUMNS = "tree_size, root_hash, timestamp, note, key_did"


def resource_row(codec: NameCodec, tenant: str, name: str, row: Any) -> Resource:
    """A row of :data:`RESOURCE_COLUMNS` for the resource looked up as ``tenant, name``, without
    its leases."""
    t, n, capacity, max_token, end, fingerprint, result, done_at, done_fp = row
    completion = None
    if done_at is not None:
        clear = codec.open(sealing.RESOURCE_RESULT, bytes(t) + bytes(n), bytes(result))
        completion = Completion(json.loads(clear), done_at, blob(done_fp))
    return Resource(tenant, name, capacity, max_token, end, blob(fingerprint), completion)


def lease_row(codec: NameCodec, row: Any) -> Lease:
    """A row of :data:`LEASE_COLUMNS` → a Lease (holder and scope from ``sealed``)."""
    t, r, sealed, token, digest, expires, lease_id = row
    _, _, holder, scope = codec.open_json(sealing.LEASE, bytes(t) + bytes(r), bytes(sealed))
    return Lease(holder, token, bytes(digest), expires, scope, lease_id)


def resources_of(
    names: NameCodec,
    wanted: dict[tuple[bytes, bytes], tuple[str, str]],
    tenant: bytes,
    resource_rows: Sequence[Sequence[Any]],
    lease_rows: Sequence[Sequence[Any]],
) -> dict[tuple[str, str], Resource]:
    """One tenant's resources, with their leases, from rows of :data:`RESOURCE_COLUMNS` and of
    :data:`LEASE_COLUMNS` (``wanted``: each digest pair's key). A lease whose resource row is
    gone is a damaged ledger: :class:`~ledger.storage.StorageError`, never a fresh resource."""
    found: dict[tuple[str, str], Resource] = {}
    for row in resource_rows:
        key = wanted[(bytes(row[0]), bytes(row[1]))]
        found[key] = resource_row(names, *key, row)
    for lease in lease_rows:
        held = found.get(wanted[(tenant, bytes(lease[1]))])
        if held is None:
            raise StorageError(DAMAGED)
        held.leases.append(lease_row(names, lease))
    return found


def listed(codec: NameCodec, found: Iterable[Any]) -> list[Listed]:
    """Rows of :data:`LEASE_COLUMNS` and the resource's capacity, in name order → one
    :class:`Listed` per resource; each lease's sealed names opened once (its resource's name
    comes with them)."""
    listing: list[Listed] = []
    for t, r, sealed, token, digest, expires, lease_id, capacity in found:
        _, name, holder, scope = codec.open_json(sealing.LEASE, bytes(t) + bytes(r), bytes(sealed))
        lease = Lease(holder, token, bytes(digest), expires, scope, lease_id)
        if listing and listing[-1].position == bytes(r):
            last = listing[-1]
            listing[-1] = Listed(last.name, last.capacity, (*last.leases, lease), last.position)
        else:
            listing.append(Listed(str(name), capacity, (lease,), bytes(r)))
    return listing


def named(codec: NameCodec, table: bytes, row: Any) -> tuple[str, str]:
    """``tenant, key, sealed`` of ``resources``, ``leases`` or ``scopes`` → the clear
    ``(tenant, name)`` (of a lease: its resource's)."""
    t, key, sealed = row
    opened = codec.open_json(table, bytes(t) + bytes(key), bytes(sealed))
    return str(opened[0]), str(opened[1])


def lease_names(codec: NameCodec, found: Iterable[Any]) -> list[tuple[str, str]]:
    """``tenant, resource, sealed`` rows of ``leases`` → one clear ``(tenant, resource)`` per
    resource, in the order found, each opened once."""
    sealed = {(bytes(t), bytes(r)): s for t, r, s in found}
    return [named(codec, sealing.LEASE, (*key, s)) for key, s in sealed.items()]


def waiter_row(codec: NameCodec, row: Any) -> WaiterRecord:
    """A row of :data:`WAITER_COLUMNS` (call and answer sealed) → a WaiterRecord."""
    waiter_id, worker, call, answer = row
    ad = str(waiter_id).encode()
    opened = None if answer is None else json.loads(codec.open(sealing.WAITER_ANSWER, ad, answer))
    return WaiterRecord(
        waiter_id, worker, json.loads(codec.open(sealing.WAITER_CALL, ad, call)), opened
    )


def blob(value: bytes | None) -> bytes | None:
    """A driver's bytes-like value (memoryview, bytes) as bytes."""
    return None if value is None else bytes(value)


def checkpoint_row(row: Any) -> CheckpointRecord:
    """A row of :data:`CHECKPOINT_COLUMNS` → the signed checkpoint stored."""
    return CheckpointRecord(int(row[0]), bytes(row[1]), int(row[2]), row[3], row[4])
