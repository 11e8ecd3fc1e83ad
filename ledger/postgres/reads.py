"""PostgreSQL reads: plain functions of a connection, inside or outside a transaction."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg

from ledger.leases import Resource
from ledger.rows import lease_row, resource_row, waiter_row
from ledger.storage import (
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    RequestRecord,
    WaiterRecord,
)

Conn = psycopg.Connection[Any]

_CHECKPOINT = "SELECT tree_size, root_hash, timestamp, note, key_did FROM checkpoints"
_RESOURCE = (
    "SELECT tenant, name, capacity, max_token, lifecycle_end, fingerprint, result, completed_at,"
    " completed_fingerprint FROM resources"
)
_LEASE = "SELECT holder, fencing_token, owner_digest, expires_at, scope, lease_id FROM leases"


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


def request(conn: Conn, tenant: str, request_id: str) -> RequestRecord | None:
    sql = "SELECT request_digest, answer, created_at FROM idempotency"
    row = conn.execute(
        sql + " WHERE tenant = %s AND request_id = %s", (tenant, request_id)
    ).fetchone()
    return None if row is None else RequestRecord(bytes(row[0]), json.loads(row[1]), row[2])


def resource(conn: Conn, tenant: str, name: str) -> Resource | None:
    row = conn.execute(_RESOURCE + " WHERE tenant = %s AND name = %s", (tenant, name)).fetchone()
    if row is None:
        return None
    found = resource_row(row)
    where = " WHERE tenant = %s AND resource = %s ORDER BY fencing_token"
    found.leases.extend(map(lease_row, conn.execute(_LEASE + where, (tenant, name))))
    return found


LIVE_LEASES = "SELECT count(*) FROM leases WHERE expires_at > %s"


def queued_waiters(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM waiters WHERE answer IS NULL").fetchone()
    return 0 if row is None else int(row[0])


def live_leases(conn: Conn, now: int) -> int:
    row = conn.execute(LIVE_LEASES, (now,)).fetchone()
    return 0 if row is None else int(row[0])


EXPIRED_LEASES = (
    "SELECT tenant, resource FROM leases WHERE expires_at <= %s ORDER BY expires_at LIMIT %s"
)
"""By the index ``leases_expires_at`` (schema step 2), as each query below names its index."""
ENDED_LIFECYCLES = (
    "SELECT tenant, name FROM resources WHERE lifecycle_end IS NOT NULL AND lifecycle_end <= %s"
    " ORDER BY lifecycle_end LIMIT %s"
)
DUE_SCOPES = "SELECT tenant, scope FROM scopes WHERE last_beat + dead_ms <= %s LIMIT %s"
"""By ``scopes_deadline``, an index on the expression ``last_beat + dead_ms``."""
SCOPE_RESOURCES = (
    "SELECT DISTINCT resource FROM leases WHERE tenant = %s AND scope = %s ORDER BY resource"
)
"""By ``leases_scope`` (partial: ``scope IS NOT NULL``)."""
_WAITER = "SELECT waiter_id, worker, call, answer FROM waiters"
WAITERS = _WAITER + " WHERE tenant = %s AND resource = %s AND answer IS NULL ORDER BY seq"
"""By ``waiters_queue``: FIFO in ``seq`` order."""


def expired_leases(conn: Conn, now: int, limit: int) -> list[tuple[str, str]]:
    """The oldest expiries first, one pair per resource."""
    rows = conn.execute(EXPIRED_LEASES, (now, limit))
    return list(dict.fromkeys((str(t), str(r)) for t, r in rows))


def ended_lifecycles(conn: Conn, now: int, limit: int) -> list[tuple[str, str]]:
    return [(str(t), str(n)) for t, n in conn.execute(ENDED_LIFECYCLES, (now, limit))]


def due_scopes(conn: Conn, now: int, limit: int) -> list[tuple[str, str]]:
    return [(str(t), str(s)) for t, s in conn.execute(DUE_SCOPES, (now, limit))]


def scope_resources(conn: Conn, tenant: str, scope: str) -> list[str]:
    return [str(r) for (r,) in conn.execute(SCOPE_RESOURCES, (tenant, scope))]


def waiters(conn: Conn, tenant: str, resource: str) -> list[WaiterRecord]:
    """The resource's waiters not yet granted, FIFO (``seq``)."""
    return [waiter_row(row) for row in conn.execute(WAITERS, (tenant, resource))]


def waiter(conn: Conn, waiter_id: str) -> WaiterRecord | None:
    row = conn.execute(_WAITER + " WHERE waiter_id = %s", (waiter_id,)).fetchone()
    return None if row is None else waiter_row(row)


def waiter_workers(conn: Conn) -> list[str]:
    return [str(w) for (w,) in conn.execute("SELECT DISTINCT worker FROM waiters")]
