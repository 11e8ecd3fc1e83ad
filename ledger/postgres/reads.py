"""PostgreSQL reads: plain functions of a connection, inside or outside a transaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from ledger import rows, sealing
from ledger.leases import Resource
from ledger.names import NameCodec
from ledger.storage import (
    DAMAGED,
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    LeaseScan,
    RequestRecord,
    StorageError,
    WaiterRecord,
)

Conn = psycopg.Connection[Any]

_CHECKPOINT = "SELECT tree_size, root_hash, timestamp, note, key_did FROM checkpoints"
_RESOURCE = f"SELECT {rows.RESOURCE_COLUMNS} FROM resources"
_LEASE = f"SELECT {rows.LEASE_COLUMNS} FROM leases"


def tree_size(conn: Conn) -> int:
    row = conn.execute("SELECT max(idx) FROM entries").fetchone()
    return 0 if row is None or row[0] is None else int(row[0]) + 1


def node(conn: Conn, level: int, index: int) -> bytes:
    sql = "SELECT hash FROM tree_nodes WHERE level = %s AND idx = %s"
    row = conn.execute(sql, (level, index)).fetchone()
    if row is None:
        raise KeyError((level, index))
    return bytes(row[0])


def entry(conn: Conn, index: int) -> bytes | None:
    row = conn.execute("SELECT leaf FROM entries WHERE idx = %s", (index,)).fetchone()
    return None if row is None else bytes(row[0])


def entries(conn: Conn, start: int, end: int) -> list[tuple[int, bytes]]:
    sql = "SELECT idx, leaf FROM entries WHERE idx >= %s AND idx < %s ORDER BY idx"
    return [(int(idx), bytes(leaf)) for idx, leaf in conn.execute(sql, (start, end))]


def stream_entries(conn: Conn, end: int) -> Iterator[tuple[int, bytes]]:
    """Entries ``[0, end)`` through a server-side cursor: memory stays flat for any ledger."""
    sql = "SELECT idx, leaf FROM entries WHERE idx < %s ORDER BY idx"
    with conn.cursor(name="tenure_export") as cur:
        cur.itersize = 2000
        for idx, leaf in cur.execute(sql, (end,)):
            yield int(idx), bytes(leaf)


def _checkpoint(row: Any) -> CheckpointRecord:
    return CheckpointRecord(int(row[0]), bytes(row[1]), int(row[2]), row[3], row[4])


def latest_checkpoint(conn: Conn) -> CheckpointRecord | None:
    row = conn.execute(_CHECKPOINT + " ORDER BY tree_size DESC LIMIT 1").fetchone()
    return None if row is None else _checkpoint(row)


def checkpoint(conn: Conn, size: int) -> CheckpointRecord | None:
    row = conn.execute(_CHECKPOINT + " WHERE tree_size = %s", (size,)).fetchone()
    return None if row is None else _checkpoint(row)


def checkpoints(conn: Conn, start: int, stop: int, limit: int | None) -> list[CheckpointRecord]:
    """Checkpoints with ``start <= tree_size <= stop``, smallest first (``limit`` None: all)."""
    sql = _CHECKPOINT + " WHERE tree_size >= %s AND tree_size <= %s ORDER BY tree_size LIMIT %s"
    return [_checkpoint(row) for row in conn.execute(sql, (start, stop, limit))]


def keys(conn: Conn) -> list[KeyRecord]:
    sql = "SELECT did, public_key, multikey, valid_from, valid_until FROM signing_keys"
    rows = conn.execute(sql + " ORDER BY valid_from, did")
    return [KeyRecord(did, bytes(pub), multi, start, end) for did, pub, multi, start, end in rows]


def api_key_tenant(conn: Conn, digest: bytes) -> str | None:
    sql = "SELECT tenant FROM api_keys WHERE key_digest = %s"
    row = conn.execute(sql, (digest,)).fetchone()
    return None if row is None else str(row[0])


def api_keys(conn: Conn) -> list[ApiKeyRecord]:
    sql = "SELECT key_digest, tenant, name, created_at FROM api_keys ORDER BY created_at"
    return [ApiKeyRecord(bytes(d), t, n, c) for d, t, n, c in conn.execute(sql)]


def log_id(conn: Conn) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
    assert row is not None, "the ledger has no log_id (schema.py sets it)"
    return str(row[0])


def request(conn: Conn, names: NameCodec, tenant: str, request_id: str) -> RequestRecord | None:
    sql = f"SELECT {rows.REQUEST_COLUMNS} FROM idempotency WHERE tenant = %s AND request_id = %s"
    row = conn.execute(sql, sealing.request_key(names, tenant, request_id)).fetchone()
    return None if row is None else rows.request_row(names, row)


def resource(conn: Conn, names: NameCodec, tenant: str, name: str) -> Resource | None:
    key = sealing.resource_key(names, tenant, name)
    row = conn.execute(_RESOURCE + " WHERE tenant = %s AND name = %s", key).fetchone()
    where = " WHERE tenant = %s AND resource = %s ORDER BY fencing_token"
    leases = conn.execute(_LEASE + where, key).fetchall()
    if row is None:
        if leases:
            raise StorageError(DAMAGED)
        return None
    found = rows.resource_row(names, tenant, name, row)
    found.leases.extend(rows.lease_row(names, lease) for lease in leases)
    return found


def resources(
    conn: Conn, names: NameCodec, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], Resource]:
    """The resources of ``keys`` that exist, with their leases: two round trips per tenant for a
    whole batch, where :func:`resource` takes two per resource. A lease whose
    resource row is gone is a damaged ledger: :class:`StorageError`, never a fresh resource."""
    wanted, by_tenant = sealing.resource_keys(names, keys)
    found: dict[tuple[str, str], Resource] = {}
    for t, digests in by_tenant.items():
        for row in conn.execute(_RESOURCE + " WHERE tenant = %s AND name = ANY(%s)", (t, digests)):
            key = wanted[(bytes(row[0]), bytes(row[1]))]
            found[key] = rows.resource_row(names, *key, row)
        where = " WHERE tenant = %s AND resource = ANY(%s) ORDER BY fencing_token"
        for lease in conn.execute(_LEASE + where, (t, digests)):
            held = found.get(wanted[(t, bytes(lease[1]))])
            if held is None:
                raise StorageError(DAMAGED)
            held.leases.append(rows.lease_row(names, lease))
    return found


LIVE_LEASES = "SELECT count(*) FROM leases WHERE expires_at > %s"


def queued_waiters(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM waiters WHERE answer IS NULL").fetchone()
    return 0 if row is None else int(row[0])


def live_leases(conn: Conn, now: int) -> int:
    row = conn.execute(LIVE_LEASES, (now,)).fetchone()
    return 0 if row is None else int(row[0])


_NAMED = "SELECT tenant, resource, sealed FROM leases"
EXPIRED_LEASES = _NAMED + " WHERE expires_at <= %s ORDER BY expires_at LIMIT %s"
"""By the index ``leases_expires_at`` (schema step 2), as each query below names its index;
a lease's sealed column gives its resource's name (docs/decisions/0010)."""
ENDED_LIFECYCLES = (
    "SELECT tenant, name, sealed FROM resources WHERE lifecycle_end IS NOT NULL"
    " AND lifecycle_end <= %s ORDER BY lifecycle_end LIMIT %s"
)
DUE_SCOPES = "SELECT tenant, scope, sealed FROM scopes WHERE last_beat + dead_ms <= %s LIMIT %s"
"""By ``scopes_deadline``, an index on the expression ``last_beat + dead_ms``."""
SCOPE_RESOURCES = _NAMED + " WHERE tenant = %s AND scope = %s"
"""By ``leases_scope`` (partial: ``scope IS NOT NULL``)."""
_WAITER = f"SELECT {rows.WAITER_COLUMNS} FROM waiters"
WAITERS = _WAITER + " WHERE tenant = %s AND resource = %s AND answer IS NULL ORDER BY seq"
"""By ``waiters_queue``: FIFO in ``seq`` order."""


def expired_leases(conn: Conn, names: NameCodec, now: int, limit: int) -> list[tuple[str, str]]:
    """The oldest expiries first, one pair per resource."""
    return rows.lease_names(names, conn.execute(EXPIRED_LEASES, (now, limit)))


def ended_lifecycles(conn: Conn, names: NameCodec, now: int, limit: int) -> list[tuple[str, str]]:
    found = conn.execute(ENDED_LIFECYCLES, (now, limit))
    return [rows.named(names, sealing.RESOURCE_NAME, row) for row in found]


def due_scopes(conn: Conn, names: NameCodec, now: int, limit: int) -> list[tuple[str, str]]:
    return [rows.named(names, sealing.SCOPE, row) for row in conn.execute(DUE_SCOPES, (now, limit))]


def scope_resources(conn: Conn, names: NameCodec, tenant: str, scope: str) -> list[str]:
    key = sealing.scope_key(names, tenant, scope)
    return sorted(name for _, name in rows.lease_names(names, conn.execute(SCOPE_RESOURCES, key)))


def waiters(conn: Conn, names: NameCodec, tenant: str, resource: str) -> list[WaiterRecord]:
    """The resource's waiters not yet granted, FIFO (``seq``)."""
    key = sealing.resource_key(names, tenant, resource)
    return [rows.waiter_row(names, row) for row in conn.execute(WAITERS, key)]


def waiter(conn: Conn, names: NameCodec, waiter_id: str) -> WaiterRecord | None:
    row = conn.execute(_WAITER + " WHERE waiter_id = %s", (waiter_id,)).fetchone()
    return None if row is None else rows.waiter_row(names, row)


def waiter_workers(conn: Conn) -> list[str]:
    return [str(w) for (w,) in conn.execute("SELECT DISTINCT worker FROM waiters")]


LISTING_BOUND = "SELECT name FROM resources WHERE tenant = %s AND name > %s ORDER BY name"
"""The ``scan``-th resource after a listing's position, by the resources' primary key."""
LISTING = (
    "SELECT l.tenant, l.resource, l.sealed, l.fencing_token, l.owner_digest, l.expires_at,"
    " l.lease_id, r.capacity FROM leases AS l JOIN resources AS r"
    " ON r.tenant = l.tenant AND r.name = l.resource WHERE l.tenant = %s AND l.resource > %s"
    " AND l.expires_at > %s"
)
"""The live leases after it, by the leases' primary key (``rows.listed`` reads them)."""


def live_resources(
    conn: Conn, names: NameCodec, tenant: str, after: bytes, now: int, scan: int
) -> LeaseScan:
    """The tenant's resources with leases live at ``now`` among its next ``scan`` after
    ``after``, in digest order; ``next`` is the last of those ``scan`` if there may be more."""
    digest = names.tenant(tenant)
    bound = conn.execute(LISTING_BOUND + " LIMIT 1 OFFSET %s", (digest, after, scan - 1))
    last = bound.fetchone()
    if last is None:
        found = conn.execute(LISTING + _IN_ORDER, (digest, after, now))
        return LeaseScan(rows.listed(names, found), None)
    up_to = " AND l.resource <= %s" + _IN_ORDER
    found = conn.execute(LISTING + up_to, (digest, after, now, last[0]))
    return LeaseScan(rows.listed(names, found), bytes(last[0]))


_IN_ORDER = " ORDER BY l.resource, l.fencing_token"
