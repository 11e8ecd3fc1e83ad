"""The rows both backends store for the name-bearing changes: digests and sealed blobs only.

``ledger/sqlite/store.py`` and ``ledger/postgres/store.py`` bind these tuples to their own
statements, in the column order each function names (docs/decisions/0010); ``ledger/rows.py``
decodes what they select. Associated data: the table and the row's lookup digests (``waiters``:
the waiter's id), so a sealed value opens only in the row it was written for.
"""

from __future__ import annotations

from collections.abc import Iterable

from ledger.changes import (
    AddWaiter,
    ArmDeadMan,
    GrantWaiter,
    PutLease,
    PutResource,
)
from ledger.keys.names import NameCodec

RESOURCE_NAME = b"resources"
RESOURCE_RESULT = b"resources/result"
LEASE = b"leases"
SCOPE = b"scopes"
WAITER_CALL = b"waiters/call"
WAITER_ANSWER = b"waiters/answer"

Row = tuple[object, ...]


def resource_key(codec: NameCodec, tenant: str, name: str) -> tuple[bytes, bytes]:
    """``(tenant, name)`` digests: the key of ``resources``, and of a resource's leases and
    waiters."""
    return codec.resource_key(tenant, name)


def resource_keys(
    codec: NameCodec, keys: Iterable[tuple[str, str]]
) -> tuple[dict[tuple[bytes, bytes], tuple[str, str]], dict[bytes, list[bytes]]]:
    """For a batch's reads of many resources: each ``(tenant, name)``'s digests mapped back to
    it, and the name digests grouped by tenant digest (one statement per tenant)."""
    wanted = {codec.resource_key(tenant, name): (tenant, name) for tenant, name in keys}
    by_tenant: dict[bytes, list[bytes]] = {}
    for t, n in wanted:
        by_tenant.setdefault(t, []).append(n)
    return wanted, by_tenant


def put_resource(codec: NameCodec, c: PutResource) -> Row:
    """``tenant, name, sealed, capacity, max_token, lifecycle_end, fingerprint, result,
    completed_at, completed_fingerprint``; ``sealed`` holds ``[tenant, name]``."""
    t, n = codec.resource_key(c.tenant, c.name)
    sealed = codec.seal_json(RESOURCE_NAME, t + n, [c.tenant, c.name])
    result = None
    if c.result_json is not None:
        result = codec.seal(RESOURCE_RESULT, t + n, c.result_json.encode())
    return (
        t,
        n,
        sealed,
        c.capacity,
        c.max_token,
        c.lifecycle_end,
        c.fingerprint,
        result,
        c.completed_at,
        c.completed_fingerprint,
    )


def put_lease(codec: NameCodec, c: PutLease) -> Row:
    """``tenant, resource, fencing_token, sealed, owner_digest, expires_at, scope, lease_id``;
    ``sealed`` holds ``[tenant, resource, holder, scope]``, ``scope`` is the scope's digest."""
    t, r = codec.resource_key(c.tenant, c.resource)
    sealed = codec.seal_json(LEASE, t + r, [c.tenant, c.resource, c.holder, c.scope])
    scope = None if c.scope is None else codec.scope(c.tenant, c.scope)
    return (t, r, c.fencing_token, sealed, c.owner_digest, c.expires_at, scope, c.lease_id)


def warm_lease(
    codec: NameCodec, tenant: str, resource: str, holder: str | None, scope: str | None
) -> None:
    """Make, ahead of the transaction, the digests and sealed names a grant of this lease
    writes (:func:`put_resource`, :func:`put_lease`): the codec remembers them."""
    t, r = codec.resource_key(tenant, resource)
    codec.seal_json(RESOURCE_NAME, t + r, [tenant, resource])
    if holder is not None:
        codec.seal_json(LEASE, t + r, [tenant, resource, holder, scope])
    if scope is not None:
        codec.scope(tenant, scope)


def lease_key(codec: NameCodec, tenant: str, resource: str, fencing_token: int) -> Row:
    """``tenant, resource, fencing_token``: the key of one lease."""
    return (*codec.resource_key(tenant, resource), fencing_token)


def arm(codec: NameCodec, c: ArmDeadMan) -> Row:
    """``tenant, scope, sealed, dead_ms, last_beat``; ``sealed`` holds ``[tenant, scope]``."""
    t, s = scope_key(codec, c.tenant, c.scope)
    return (t, s, codec.seal_json(SCOPE, t + s, [c.tenant, c.scope]), c.dead_ms, c.last_beat)


def scope_key(codec: NameCodec, tenant: str, scope: str) -> tuple[bytes, bytes]:
    return codec.tenant(tenant), codec.scope(tenant, scope)


def add_waiter(codec: NameCodec, c: AddWaiter) -> Row:
    """``waiter_id, tenant, resource, worker, call``, the call sealed to the waiter's id."""
    t, r = codec.resource_key(c.tenant, c.resource)
    call = codec.seal(WAITER_CALL, c.waiter_id.encode(), c.call.encode())
    return (c.waiter_id, t, r, c.worker, call)


def grant_waiter(codec: NameCodec, c: GrantWaiter) -> Row:
    """``answer, waiter_id``, the answer sealed to the waiter's id."""
    return (codec.seal(WAITER_ANSWER, c.waiter_id.encode(), c.answer.encode()), c.waiter_id)
