"""SQLite reads: plain functions of a connection, used inside and outside a write transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ledger import rows, sealing
from ledger.leases import Resource
from ledger.names import NameCodec
from ledger.sqlite import pending
from ledger.sqlite.positions import node_position
from ledger.storage import (
    DAMAGED,
    ApiKeyRecord,
    CheckpointRecord,
    KeyRecord,
    RequestRecord,
    StorageError,
    WaiterRecord,
)

_CHECKPOINT = "SELECT tree_size, root_hash, timestamp, note, key_did FROM checkpoints"
_STATE = (
    "SELECT tenant, name, token, sealed, capacity, max_token, lifecycle_end, fingerprint, result,"
    " completed_at, completed_fingerprint, owner_digest, expires_at, lease_id FROM state"
)
"""A resource's rows of ``state`` (docs/decisions/0013): its own at ``token`` 0, then its leases."""


def tree_size(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(idx) FROM entries").fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


def node(conn: sqlite3.Connection, level: int, index: int) -> bytes:
    sql = "SELECT hash FROM tree_nodes WHERE pos = ?"  # docs/decisions/0016
    row = conn.execute(sql, (node_position(level, index),)).fetchone()
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


def api_key_tenant(conn: sqlite3.Connection, digest: bytes) -> str | None:
    row = conn.execute("SELECT tenant FROM api_keys WHERE key_digest = ?", (digest,)).fetchone()
    return None if row is None else str(row[0])


def api_keys(conn: sqlite3.Connection) -> list[ApiKeyRecord]:
    sql = "SELECT key_digest, tenant, name, created_at FROM api_keys ORDER BY created_at"
    return [ApiKeyRecord(bytes(d), t, n, c) for d, t, n, c in conn.execute(sql)]


def log_id(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
    return str(row[0])


def live_leases(conn: sqlite3.Connection, now: int) -> int:
    sql = (
        "SELECT count(*) FROM state INDEXED BY state_expires_at WHERE token > 0 AND expires_at > ?"
    )
    return int(conn.execute(sql, (now,)).fetchone()[0])


def request(
    conn: sqlite3.Connection, names: NameCodec, tenant: str, request_id: str
) -> RequestRecord | None:
    sql = f"SELECT {rows.REQUEST_COLUMNS} FROM idempotency WHERE tenant = ? AND request_id = ?"
    row = conn.execute(sql, sealing.request_key(names, tenant, request_id)).fetchone()
    return None if row is None else rows.request_row(names, row)


def resource(conn: sqlite3.Connection, names: NameCodec, tenant: str, name: str) -> Resource | None:
    key = sealing.resource_key(names, tenant, name)
    found: dict[tuple[str, str], Resource] = {}
    where = " WHERE tenant = ? AND name = ? ORDER BY token"
    _decode(names, {key: (tenant, name)}, found, conn.execute(_STATE + where, key))
    return found.get((tenant, name))


def resources(
    conn: sqlite3.Connection, names: NameCodec, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], Resource]:
    """The resources of ``keys`` that exist, with their leases: one statement per tenant and
    64 names for a whole batch, where :func:`resource` takes one per resource."""
    wanted, by_tenant = sealing.resource_keys(names, keys)
    found: dict[tuple[str, str], Resource] = {}
    for t, digests in by_tenant.items():
        for start, count in pending.chunks(len(digests)):
            part = digests[start : start + count]
            where = f" WHERE tenant = ? AND name IN ({pending.marks(count)}) ORDER BY name, token"
            _decode(names, wanted, found, conn.execute(_STATE + where, (t, *part)))
    return found


def _decode(
    names: NameCodec,
    wanted: dict[tuple[bytes, bytes], tuple[str, str]],
    found: dict[tuple[str, str], Resource],
    state: Iterable[Any],
) -> None:
    """Rows of :data:`_STATE`, each resource's first (``token`` 0), into ``found``. A lease
    with no resource row before it is a damaged ledger (its resource's highest fencing token is
    gone): :class:`StorageError`, never a guess."""
    for t, n, token, sealed, *resource, owner, expires, lease_id in state:
        key = wanted[(bytes(t), bytes(n))]
        if token == 0:
            found[key] = rows.resource_row(names, *key, (t, n, *resource))
            continue
        held = found.get(key)
        if held is None:
            raise StorageError(DAMAGED)
        held.leases.append(rows.lease_row(names, (t, n, sealed, token, owner, expires, lease_id)))


def ended_lifecycles(
    conn: sqlite3.Connection, names: NameCodec, now: int, limit: int
) -> list[tuple[str, str]]:
    sql = "SELECT tenant, name, sealed FROM state INDEXED BY state_lifecycle_end"
    sql += " WHERE lifecycle_end IS NOT NULL AND lifecycle_end <= ? ORDER BY lifecycle_end LIMIT ?"
    found = conn.execute(sql, (now, limit))
    return [rows.named(names, sealing.RESOURCE_NAME, row) for row in found]


_NAMED_LEASE = "SELECT tenant, name, sealed FROM state"


def expired_leases(
    conn: sqlite3.Connection, names: NameCodec, now: int, limit: int
) -> list[tuple[str, str]]:
    sql = _NAMED_LEASE + " INDEXED BY state_expires_at WHERE token > 0 AND expires_at <= ?"
    return rows.lease_names(names, conn.execute(sql + " ORDER BY expires_at LIMIT ?", (now, limit)))


def due_scopes(
    conn: sqlite3.Connection, names: NameCodec, now: int, limit: int
) -> list[tuple[str, str]]:
    sql = "SELECT tenant, scope, sealed FROM scopes INDEXED BY scopes_deadline"
    sql += " WHERE last_beat + dead_ms <= ? LIMIT ?"
    return [rows.named(names, sealing.SCOPE, row) for row in conn.execute(sql, (now, limit))]


def scope_resources(
    conn: sqlite3.Connection, names: NameCodec, tenant: str, scope: str
) -> list[str]:
    sql = _NAMED_LEASE + " INDEXED BY state_scope WHERE tenant = ? AND scope = ?"
    found = conn.execute(sql, sealing.scope_key(names, tenant, scope))
    return sorted(name for _, name in rows.lease_names(names, found))


_WAITER = f"SELECT {rows.WAITER_COLUMNS} FROM waiters"


def queued_waiters(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM waiters WHERE answer IS NULL").fetchone()[0])


def waiters(
    conn: sqlite3.Connection, names: NameCodec, tenant: str, resource: str
) -> list[WaiterRecord]:
    sql = _WAITER + " WHERE tenant = ? AND resource = ? AND answer IS NULL ORDER BY seq"
    key = sealing.resource_key(names, tenant, resource)
    return [rows.waiter_row(names, row) for row in conn.execute(sql, key)]


def waiter(conn: sqlite3.Connection, names: NameCodec, waiter_id: str) -> WaiterRecord | None:
    row = conn.execute(_WAITER + " WHERE waiter_id = ?", (waiter_id,)).fetchone()
    return None if row is None else rows.waiter_row(names, row)


def waiter_workers(conn: sqlite3.Connection) -> list[str]:
    return [str(w) for (w,) in conn.execute("SELECT DISTINCT worker FROM waiters")]
