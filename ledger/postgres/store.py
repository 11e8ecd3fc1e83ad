"""The change→SQL translation for PostgreSQL, inside the caller's write transaction.

Each typed change (``ledger/changes.py``) becomes one prepared statement; psycopg prepares a
statement on the server once it has run a few times on a connection. Rewrites of ``entries`` and
``tree_nodes`` fail on their primary key or on the append-only triggers (``schema.py``).
"""

from __future__ import annotations

from typing import Any

import psycopg

from ledger.changes import (
    AddWaiter,
    AppendEntry,
    ArmDeadMan,
    Change,
    DisarmDeadMan,
    DropLease,
    DropWaiter,
    DropWorkerWaiters,
    ForgetRequests,
    GrantWaiter,
    PutCheckpoint,
    PutLease,
    PutNodes,
    PutResource,
    RaiseFencingFloor,
    RememberRequest,
    SetLeaseExpiry,
    row,
)
from ledger.keys import idempotency, sealing
from ledger.keys.names import NameCodec

Conn = psycopg.Connection[Any]

_LEASE_KEY = "WHERE tenant = %s AND resource = %s AND fencing_token = %s"
RESOURCE_UPDATE = (
    " ON CONFLICT (tenant, name) DO UPDATE SET sealed = EXCLUDED.sealed,"
    " capacity = EXCLUDED.capacity,"
    " max_token = EXCLUDED.max_token, lifecycle_end = EXCLUDED.lifecycle_end,"
    " fingerprint = EXCLUDED.fingerprint, result = EXCLUDED.result,"
    " completed_at = EXCLUDED.completed_at, completed_fingerprint = EXCLUDED.completed_fingerprint"
)
"""A resource's row is replaced where it is: every column it sets, set again."""
_PUT_RESOURCE = (
    "INSERT INTO resources(tenant, name, sealed, capacity, max_token, lifecycle_end, fingerprint,"
    " result, completed_at, completed_fingerprint)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)" + RESOURCE_UPDATE
)
_PUT_LEASE = (
    "INSERT INTO leases(tenant, resource, fencing_token, sealed, owner_digest, expires_at, scope,"
    " lease_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
_REMEMBER = (
    "INSERT INTO idempotency(tenant, request_id, request_digest, answer, created_at)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, request_id) DO UPDATE SET"
    " request_digest = EXCLUDED.request_digest, answer = EXCLUDED.answer,"
    " created_at = EXCLUDED.created_at"
)
_ARM = (
    "INSERT INTO scopes(tenant, scope, sealed, dead_ms, last_beat) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (tenant, scope) DO UPDATE SET sealed = EXCLUDED.sealed,"
    " dead_ms = EXCLUDED.dead_ms,"
    " last_beat = EXCLUDED.last_beat"
)
_CHECKPOINT = (
    "INSERT INTO checkpoints(tree_size, root_hash, timestamp, note, key_did)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tree_size) DO NOTHING"
)

_FLOOR = (
    "INSERT INTO meta(key, value) VALUES ('fencing_floor', %s) ON CONFLICT (key) DO UPDATE"
    " SET value = GREATEST(meta.value::bigint, EXCLUDED.value::bigint)::text"
)
"""The fencing floor only rises (``ledger/fencing_floor.py``)."""


def apply(conn: Conn, names: NameCodec, change: Change) -> None:
    """The PostgreSQL translation of one change, inside the caller's transaction; names become
    digests and sealed blobs (``ledger/keys/sealing.py``)."""
    match change:
        case AppendEntry():
            sql = "INSERT INTO entries(idx, leaf) VALUES (%s, %s)"
            conn.execute(sql, (change.index, change.leaf))
        case PutNodes():
            with conn.cursor() as cur:
                sql = "INSERT INTO tree_nodes(level, idx, hash) VALUES (%s, %s, %s)"
                cur.executemany(sql, change.nodes)
        case PutResource():
            conn.execute(_PUT_RESOURCE, sealing.put_resource(names, change))
        case PutLease():
            conn.execute(_PUT_LEASE, sealing.put_lease(names, change))
        case DropLease():
            key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
            conn.execute(f"DELETE FROM leases {_LEASE_KEY}", key)
        case SetLeaseExpiry():
            key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
            conn.execute(
                f"UPDATE leases SET expires_at = %s {_LEASE_KEY}", (change.expires_at, *key)
            )
        case _:
            _apply_rare(conn, names, change)


def _apply_rare(conn: Conn, names: NameCodec, change: Change) -> None:
    match change:
        case RememberRequest():
            conn.execute(_REMEMBER, idempotency.row(names, change))
        case ForgetRequests():
            conn.execute("DELETE FROM idempotency WHERE created_at < %s", (change.before,))
        case ArmDeadMan():
            conn.execute(_ARM, sealing.arm(names, change))
        case DisarmDeadMan():
            key = sealing.scope_key(names, change.tenant, change.scope)
            conn.execute("DELETE FROM scopes WHERE tenant = %s AND scope = %s", key)
        case PutCheckpoint():
            conn.execute(_CHECKPOINT, row(change))
        case RaiseFencingFloor():
            conn.execute(_FLOOR, (str(change.floor),))
        case _:
            _apply_waiters(conn, names, change)


def _apply_waiters(conn: Conn, names: NameCodec, change: Change) -> None:
    match change:
        case AddWaiter():
            sql = "INSERT INTO waiters(waiter_id, tenant, resource, worker, call)"
            conn.execute(sql + " VALUES (%s, %s, %s, %s, %s)", sealing.add_waiter(names, change))
        case GrantWaiter():
            sql = "UPDATE waiters SET answer = %s WHERE waiter_id = %s"
            conn.execute(sql, sealing.grant_waiter(names, change))
        case DropWaiter():
            conn.execute("DELETE FROM waiters WHERE waiter_id = %s", row(change))
        case DropWorkerWaiters():
            conn.execute("DELETE FROM waiters WHERE worker = %s", row(change))
        case _:
            raise TypeError(f"no PostgreSQL translation for {change!r}")


def record_key_use(conn: Conn, did: str, public_key: bytes, multikey: str, start: int) -> None:
    """``did`` signs from ``start``: every other open key's validity ends there."""
    sql = "UPDATE signing_keys SET valid_until = %s WHERE valid_until IS NULL AND did <> %s"
    conn.execute(sql, (start, did))
    conn.execute(
        "INSERT INTO signing_keys(did, public_key, multikey, valid_from, valid_until)"
        " VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (did) DO NOTHING",
        (did, public_key, multikey, start),
    )


def add_api_key(conn: Conn, digest: bytes, tenant: str, name: str, created_at: int) -> None:
    sql = "INSERT INTO api_keys(key_digest, tenant, name, created_at) VALUES (%s, %s, %s, %s)"
    conn.execute(sql, (digest, tenant, name, created_at))


def revoke_api_key(conn: Conn, digest: bytes) -> bool:
    sql = "DELETE FROM api_keys WHERE key_digest = %s RETURNING key_digest"
    return conn.execute(sql, (digest,)).fetchone() is not None  # rowcount waits in a pipeline
