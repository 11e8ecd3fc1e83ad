"""SQLite: the change→SQL translation (the connection and schema: ``ledger/sqlite/schema.py``).

The ledger is one SQLite file in WAL mode with ``synchronous=FULL``: a commit returns only after
the WAL is fsynced. The group committer (``ledger/writer/committer.py``) hands every batch queued
since
its last commit to one write transaction (``ledger/sqlite/backend.py``), where :func:`apply`
translates each typed change (``ledger/changes.py``) to a prepared statement. Resources and their
leases are rows of one table, ``state`` (a resource at ``token`` 0, docs/decisions/0013).
"""

from __future__ import annotations

import sqlite3

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
from ledger.sqlite import pending

_LEASE_KEY = "WHERE tenant = ? AND name = ? AND token = ?"


def apply(conn: sqlite3.Connection, names: NameCodec, change: Change) -> None:
    """The SQLite translation of one change (ledger/changes.py), inside the caller's transaction;
    names become digests and sealed blobs (``ledger/keys/sealing.py``)."""
    match change:
        case AppendEntry():
            conn.execute(
                "INSERT INTO entries(idx, leaf) VALUES (?, ?)", (change.index, change.leaf)
            )
        case PutNodes():
            conn.executemany(pending.NODE_ROW, pending.node_rows(change.nodes))
        case PutResource():
            conn.execute(pending.RESOURCE_ROW, (*sealing.put_resource(names, change), 0))
        case PutLease():
            conn.execute(pending.LEASE_ROW, sealing.put_lease(names, change))
        case DropLease():
            key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
            conn.execute(f"DELETE FROM state {_LEASE_KEY}", key)
        case SetLeaseExpiry():
            key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
            conn.execute(f"UPDATE state SET expires_at = ? {_LEASE_KEY}", (change.expires_at, *key))
        case _:
            _apply_rare(conn, names, change)


def _apply_rare(conn: sqlite3.Connection, names: NameCodec, change: Change) -> None:
    match change:
        case RememberRequest():
            sql = "INSERT OR REPLACE INTO idempotency(tenant, request_id, request_digest, answer,"
            conn.execute(
                sql + " created_at) VALUES (?, ?, ?, ?, ?)", idempotency.row(names, change)
            )
        case ForgetRequests():
            conn.execute("DELETE FROM idempotency WHERE created_at < ?", (change.before,))
        case ArmDeadMan():
            sql = "INSERT OR REPLACE INTO scopes(tenant, scope, sealed, dead_ms, last_beat)"
            conn.execute(sql + " VALUES (?, ?, ?, ?, ?)", sealing.arm(names, change))
        case DisarmDeadMan():
            key = sealing.scope_key(names, change.tenant, change.scope)
            conn.execute("DELETE FROM scopes WHERE tenant = ? AND scope = ?", key)
        case PutCheckpoint():
            sql = (
                "INSERT OR IGNORE INTO checkpoints(tree_size, root_hash, timestamp, note, key_did)"
            )
            conn.execute(sql + " VALUES (?, ?, ?, ?, ?)", row(change))
        case RaiseFencingFloor():
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('fencing_floor', ?) ON CONFLICT(key) DO"
                " UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                (str(change.floor),),
            )
        case _:
            _apply_waiters(conn, names, change)


def _apply_waiters(conn: sqlite3.Connection, names: NameCodec, change: Change) -> None:
    match change:
        case AddWaiter():
            sql = "INSERT INTO waiters(waiter_id, tenant, resource, worker, call)"
            conn.execute(sql + " VALUES (?, ?, ?, ?, ?)", sealing.add_waiter(names, change))
        case GrantWaiter():
            sql = "UPDATE waiters SET answer = ? WHERE waiter_id = ?"
            conn.execute(sql, sealing.grant_waiter(names, change))
        case DropWaiter():
            conn.execute("DELETE FROM waiters WHERE waiter_id = ?", row(change))
        case DropWorkerWaiters():
            conn.execute("DELETE FROM waiters WHERE worker = ?", row(change))
        case _:
            raise TypeError(f"no SQLite translation for {change!r}")
