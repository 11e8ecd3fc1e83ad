"""SQLite reads: plain functions of a connection, used inside and outside a write transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

from ledger.leases import Resource
from ledger.rows import lease_row, resource_row, waiter_row
from ledger.storage import (
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    RequestRecord,
    WaiterRecord,
)

_CHECKPOINT = "SELECT tree_size, root_hash, timestamp, note, key_did FROM checkpoints"
_LEASE = "SELECT holder, fencing_token, owner_digest, expires_at, scope, lease_id FROM leases"


def tree_size(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(idx) FROM entries").fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


def node(conn: sqlite3.Connection, level: int, index: int) -> bytes:
    sql = "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?"
    row = conn.execute(sql, (level, index)).fetchone()
    if row is None:
        raise KeyError((level, index))
    return bytes(row[0])


def entry(conn: sqlite3.Connection, index: int) -> bytes | None:
    row = conn.execute("SELECT leaf FROM entries WHERE idx = ?", (index,)).fetchone()
    return None if row is None else bytes(row[0])


def entries(conn: sqlite3.Connection, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    sql = "SELECT idx, leaf FROM entries WHERE idx >= ? AND idx < ? ORDER BY idx"
    for idx, leaf in conn.execute(sql, (start, end)):
        yield idx, bytes(leaf)


def _checkpoint(row: tuple[int, bytes, int, str, str]) -> CheckpointRecord:
    return CheckpointRecord(row[0], bytes(row[1]), row[2], row[3], row[4])


def latest_checkpoint(conn: sqlite3.Connection) -> CheckpointRecord | None:
    row = conn.execute(_CHECKPOINT + " ORDER BY tree_size DESC LIMIT 1").fetchone()
    return None if row is None else _checkpoint(row)


def checkpoint(conn: sqlite3.Connection, size: int) -> CheckpointRecord | None:
    row = conn.execute(_CHECKPOINT + " WHERE tree_size = ?", (size,)).fetchone()
    return None if row is None else _checkpoint(row)


def checkpoints(
    conn: sqlite3.Connection, start: int, stop: int, limit: int = -1
) -> Iterator[CheckpointRecord]:
    """Checkpoints with ``start <= tree_size <= stop``, smallest first (``limit`` -1: all)."""
    sql = _CHECKPOINT + " WHERE tree_size >= ? AND tree_size <= ? ORDER BY tree_size LIMIT ?"
    for row in conn.execute(sql, (start, stop, limit)):
        yield _checkpoint(row)


def keys(conn: sqlite3.Connection) -> list[KeyRecord]:
    sql = "SELECT did, public_key, multikey, valid_from, valid_until FROM signing_keys"
    rows = conn.execute(sql + " ORDER BY valid_from")
    return [KeyRecord(did, bytes(pub), multi, start, end) for did, pub, multi, start, end in rows]


def api_keys(conn: sqlite3.Connection) -> list[ApiKeyRecord]:
    sql = "SELECT key_digest, tenant, name, created_at FROM api_keys ORDER BY created_at"
    return [ApiKeyRecord(bytes(d), t, n, c) for d, t, n, c in conn.execute(sql)]


def log_id(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
    return str(row[0])


def live_leases(conn: sqlite3.Connection, now: int) -> int:
    sql = "SELECT count(*) FROM leases INDEXED BY leases_expires_at WHERE expires_at > ?"
    return int(conn.execute(sql, (now,)).fetchone()[0])


def request(conn: sqlite3.Connection, tenant: str, request_id: str) -> RequestRecord | None:
    sql = "SELECT request_digest, answer, created_at FROM idempotency"
    row = conn.execute(
        sql + " WHERE tenant = ? AND request_id = ?", (tenant, request_id)
    ).fetchone()
    return None if row is None else RequestRecord(bytes(row[0]), json.loads(row[1]), row[2])


def resource(conn: sqlite3.Connection, tenant: str, name: str) -> Resource | None:
    sql = "SELECT * FROM resources WHERE tenant = ? AND name = ?"
    row = conn.execute(sql, (tenant, name)).fetchone()
    if row is None:
        return None
    found = resource_row(row)
    where = " WHERE tenant = ? AND resource = ? ORDER BY fencing_token"
    found.leases.extend(map(lease_row, conn.execute(_LEASE + where, row[:2])))
    return found


def ended_lifecycles(conn: sqlite3.Connection, now: int, limit: int) -> list[tuple[str, str]]:
    sql = "SELECT tenant, name FROM resources INDEXED BY resources_lifecycle_end"
    sql += " WHERE lifecycle_end IS NOT NULL AND lifecycle_end <= ? ORDER BY lifecycle_end LIMIT ?"
    return [(str(t), str(n)) for t, n in conn.execute(sql, (now, limit))]


def expired_leases(conn: sqlite3.Connection, now: int, limit: int) -> list[tuple[str, str]]:
    sql = "SELECT tenant, resource FROM leases INDEXED BY leases_expires_at WHERE expires_at <= ?"
    rows = conn.execute(sql + " ORDER BY expires_at LIMIT ?", (now, limit))
    return list(dict.fromkeys((str(t), str(r)) for t, r in rows))


def due_scopes(conn: sqlite3.Connection, now: int, limit: int) -> list[tuple[str, str]]:
    sql = "SELECT tenant, scope FROM scopes INDEXED BY scopes_deadline"
    sql += " WHERE last_beat + dead_ms <= ? LIMIT ?"
    return [(str(t), str(s)) for t, s in conn.execute(sql, (now, limit))]


def scope_resources(conn: sqlite3.Connection, tenant: str, scope: str) -> list[str]:
    sql = "SELECT DISTINCT resource FROM leases INDEXED BY leases_scope"
    sql += " WHERE tenant = ? AND scope = ? ORDER BY resource"
    return [str(r) for (r,) in conn.execute(sql, (tenant, scope))]


_WAITER = "SELECT waiter_id, worker, call, answer FROM waiters"


def queued_waiters(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM waiters WHERE answer IS NULL").fetchone()[0])


def waiters(conn: sqlite3.Connection, tenant: str, resource: str) -> list[WaiterRecord]:
    sql = _WAITER + " WHERE tenant = ? AND resource = ? AND answer IS NULL ORDER BY seq"
    return [waiter_row(row) for row in conn.execute(sql, (tenant, resource))]


def waiter(conn: sqlite3.Connection, waiter_id: str) -> WaiterRecord | None:
    row = conn.execute(_WAITER + " WHERE waiter_id = ?", (waiter_id,)).fetchone()
    return None if row is None else waiter_row(row)


def waiter_workers(conn: sqlite3.Connection) -> list[str]:
    return [str(w) for (w,) in conn.execute("SELECT DISTINCT worker FROM waiters")]
