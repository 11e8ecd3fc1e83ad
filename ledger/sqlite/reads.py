"""SQLite reads: the SQL of every read, as methods the backend's classes inherit.

:class:`Reads` holds what every reader asks; :class:`StateReads` the state a decision reads (the
write transaction), :class:`LoopReads` the loop thread's and :class:`SnapshotReads` an export's.
A class that inherits them says only which connection it reads on (``_reading``) and, for the
state, which names codec opens the rows (``_codec``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ledger import rows
from ledger.keys import idempotency, sealing
from ledger.keys.names import NameCodec
from ledger.lease.leases import Lease, Resource
from ledger.sqlite import pending
from ledger.sqlite.positions import node_position
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

_CHECKPOINT = f"SELECT {rows.CHECKPOINT_COLUMNS} FROM checkpoints"
_CHECKPOINTS = _CHECKPOINT + " WHERE tree_size >= ? AND tree_size <= ? ORDER BY tree_size LIMIT ?"
_ENTRIES = "SELECT idx, leaf FROM entries WHERE idx >= ? AND idx < ? ORDER BY idx"
_STATE = (
    "SELECT tenant, name, token, sealed, capacity, max_token, lifecycle_end, fingerprint, result,"
    " completed_at, completed_fingerprint, owner_digest, expires_at, lease_id FROM state"
)
"""A resource's rows of ``state`` (docs/decisions/0013): its own at ``token`` 0, then its leases."""
_NAMED_LEASE = "SELECT tenant, name, sealed FROM state"
_DUE = (
    _STATE + " WHERE (tenant, name) IN (SELECT tenant, name FROM state INDEXED BY state_expires_at"
    " WHERE token > 0 AND expires_at <= ? ORDER BY expires_at LIMIT ?) ORDER BY tenant, name, token"
)
"""The resources of the oldest due leases, whole: each looked up by its primary key."""
_WAITER = f"SELECT {rows.WAITER_COLUMNS} FROM waiters"
_REQUEST = f"SELECT {idempotency.COLUMNS} FROM idempotency WHERE tenant = ? AND request_id = ?"
_LISTING_BOUND = (
    "SELECT name FROM state WHERE tenant = ? AND name > ? AND token = 0"
    " ORDER BY name LIMIT 1 OFFSET ?"
)
_LISTING = (
    "SELECT l.tenant, l.name, l.sealed, l.token, l.owner_digest, l.expires_at, l.lease_id,"
    " r.capacity FROM state AS l JOIN state AS r"
    " ON r.tenant = l.tenant AND r.name = l.name AND r.token = 0"
    " WHERE l.tenant = ? AND l.name > ? AND l.token > 0 AND l.expires_at > ?"
)
_IN_ORDER = " ORDER BY l.name, l.token"


class Reads:
    """The reads of the log every reader asks for."""

    def _reading(self) -> sqlite3.Connection:
        """The connection to read on (a transaction's writes what it held back first)."""
        raise NotImplementedError

    def _codec(self) -> NameCodec:
        """The names codec that finds and opens the rows of the state tables."""
        raise NotImplementedError

    def tree_size(self) -> int:
        row = self._reading().execute("SELECT max(idx) FROM entries").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def node(self, level: int, index: int) -> bytes:
        sql = "SELECT hash FROM tree_nodes WHERE pos = ?"  # docs/decisions/0016
        row = self._reading().execute(sql, (node_position(level, index),)).fetchone()
        if row is None:
            raise KeyError((level, index))
        return bytes(row[0])

    def entry(self, index: int) -> bytes | None:
        sql = "SELECT leaf FROM entries WHERE idx = ?"
        row = self._reading().execute(sql, (index,)).fetchone()
        return None if row is None else bytes(row[0])

    def latest_checkpoint(self) -> CheckpointRecord | None:
        sql = _CHECKPOINT + " ORDER BY tree_size DESC LIMIT 1"
        row = self._reading().execute(sql).fetchone()
        return None if row is None else rows.checkpoint_row(row)

    def signing_keys(self) -> list[KeyRecord]:
        sql = "SELECT did, public_key, multikey, valid_from, valid_until FROM signing_keys"
        found = self._reading().execute(sql + " ORDER BY valid_from")
        return [KeyRecord(did, bytes(pub), mk, start, end) for did, pub, mk, start, end in found]

    def log_id(self) -> str:
        row = self._reading().execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        return str(row[0])

    def api_key_tenant(self, digest: bytes) -> str | None:
        sql = "SELECT tenant FROM api_keys WHERE key_digest = ?"
        row = self._reading().execute(sql, (digest,)).fetchone()
        return None if row is None else str(row[0])

    def fencing_floor(self) -> int:
        sql = "SELECT value FROM meta WHERE key = 'fencing_floor'"
        row = self._reading().execute(sql).fetchone()
        return 0 if row is None else int(row[0])


class LoopReads(Reads):
    """What the loop thread reads outside a transaction: pages of the log, keys, gauges."""

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        return [(idx, bytes(leaf)) for idx, leaf in self._reading().execute(_ENTRIES, (start, end))]

    def checkpoint(self, tree_size: int) -> CheckpointRecord | None:
        sql = _CHECKPOINT + " WHERE tree_size = ?"
        row = self._reading().execute(sql, (tree_size,)).fetchone()
        return None if row is None else rows.checkpoint_row(row)

    def checkpoints(self, start: int, limit: int) -> list[CheckpointRecord]:
        found = self._reading().execute(_CHECKPOINTS, (start, 2**63 - 1, limit))
        return [rows.checkpoint_row(row) for row in found]

    def api_keys(self) -> list[ApiKeyRecord]:
        sql = "SELECT key_digest, tenant, name, created_at FROM api_keys ORDER BY created_at"
        return [ApiKeyRecord(bytes(d), t, n, c) for d, t, n, c in self._reading().execute(sql)]

    def live_leases(self, now: int) -> int:
        sql = "SELECT count(*) FROM state INDEXED BY state_expires_at"
        sql += " WHERE token > 0 AND expires_at > ?"
        return int(self._reading().execute(sql, (now,)).fetchone()[0])

    def queued_waiters(self) -> int:
        sql = "SELECT count(*) FROM waiters WHERE answer IS NULL"
        return int(self._reading().execute(sql).fetchone()[0])

    def live_resources(self, tenant: str, after: bytes, now: int, scan: int) -> LeaseScan:
        """The tenant's resources with leases live at ``now`` among its next ``scan`` after
        ``after``, in the order of their names' digests (the key of ``state``): the ``scan``-th
        resource row found by the index alone, then the live leases up to it with their
        resource's capacity; ``next`` is that row if there may be more."""
        conn, names = self._reading(), self._codec()
        digest = names.tenant(tenant)
        last = conn.execute(_LISTING_BOUND, (digest, after, scan - 1)).fetchone()
        if last is None:
            found = conn.execute(_LISTING + _IN_ORDER, (digest, after, now))
            return LeaseScan(rows.listed(names, found), None)
        up_to = _LISTING + " AND l.name <= ?" + _IN_ORDER
        found = conn.execute(up_to, (digest, after, now, last[0]))
        return LeaseScan(rows.listed(names, found), bytes(last[0]))


class SnapshotReads(Reads):
    """An export's reads: the whole log streamed, as of the snapshot's first read."""

    def entries(self, end: int) -> Iterator[tuple[int, bytes]]:
        for idx, leaf in self._reading().execute(_ENTRIES, (0, end)):
            yield idx, bytes(leaf)

    def checkpoints(self, up_to: int) -> Iterator[CheckpointRecord]:
        for row in self._reading().execute(_CHECKPOINTS, (0, up_to, -1)):
            yield rows.checkpoint_row(row)


class StateReads(Reads):
    """The state a decision reads inside the write transaction; names are looked up by their
    digests and opened from their sealed columns (``ledger/keys/sealing.py``)."""

    def highest_token(self) -> int:
        sql = "SELECT max(max_token) FROM state WHERE token = 0"
        return int(self._reading().execute(sql).fetchone()[0] or 0)

    def request(self, tenant: str, request_id: str) -> RequestRecord | None:
        names = self._codec()
        key = idempotency.key(names, tenant, request_id)
        found = self._reading().execute(_REQUEST, key).fetchone()
        return None if found is None else idempotency.record(names, found)

    def resource(self, tenant: str, name: str) -> Resource | None:
        conn, names = self._reading(), self._codec()
        key = sealing.resource_key(names, tenant, name)
        found: dict[tuple[str, str], Resource] = {}
        where = " WHERE tenant = ? AND name = ? ORDER BY token"
        _decode(names, {key: (tenant, name)}, found, conn.execute(_STATE + where, key))
        return found.get((tenant, name))

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        """The resources of ``keys`` that exist, with their leases: one statement per tenant and
        64 names for a whole batch, where :meth:`resource` takes one per resource."""
        conn, names = self._reading(), self._codec()
        wanted, by_tenant = sealing.resource_keys(names, keys)
        found: dict[tuple[str, str], Resource] = {}
        for t, digests in by_tenant.items():
            for start, count in pending.chunks(len(digests)):
                part = digests[start : start + count]
                where = (
                    f" WHERE tenant = ? AND name IN ({pending.marks(count)}) ORDER BY name, token"
                )
                _decode(names, wanted, found, conn.execute(_STATE + where, (t, *part)))
        return found

    def ended_lifecycles(self, now: int, limit: int) -> list[tuple[str, str]]:
        sql = "SELECT tenant, name, sealed FROM state INDEXED BY state_lifecycle_end WHERE"
        sql += " lifecycle_end IS NOT NULL AND lifecycle_end <= ? ORDER BY lifecycle_end LIMIT ?"
        names, found = self._codec(), self._reading().execute(sql, (now, limit))
        return [rows.named(names, sealing.RESOURCE_NAME, row) for row in found]

    def expired(self, now: int, limit: int) -> dict[tuple[str, str], Resource]:
        """One statement: the due resources' rows by their digests, each name opened once from
        its first lease's sealed column (no name digested again, no row read twice)."""
        return _decode_due(self._codec(), self._reading().execute(_DUE, (now, limit)))

    def due_scopes(self, now: int, limit: int) -> list[tuple[str, str]]:
        sql = "SELECT tenant, scope, sealed FROM scopes INDEXED BY scopes_deadline"
        sql += " WHERE last_beat + dead_ms <= ? LIMIT ?"
        names, found = self._codec(), self._reading().execute(sql, (now, limit))
        return [rows.named(names, sealing.SCOPE, row) for row in found]

    def scope_resources(self, tenant: str, scope: str) -> list[str]:
        names = self._codec()
        sql = _NAMED_LEASE + " INDEXED BY state_scope WHERE tenant = ? AND scope = ?"
        found = self._reading().execute(sql, sealing.scope_key(names, tenant, scope))
        return sorted(name for _, name in rows.lease_names(names, found))

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        names = self._codec()
        sql = _WAITER + " WHERE tenant = ? AND resource = ? AND answer IS NULL ORDER BY seq"
        found = self._reading().execute(sql, sealing.resource_key(names, tenant, resource))
        return [rows.waiter_row(names, row) for row in found]

    def waiter(self, waiter_id: str) -> WaiterRecord | None:
        row = self._reading().execute(_WAITER + " WHERE waiter_id = ?", (waiter_id,)).fetchone()
        return None if row is None else rows.waiter_row(self._codec(), row)

    def waiter_workers(self) -> list[str]:
        found = self._reading().execute("SELECT DISTINCT worker FROM waiters")
        return [str(w) for (w,) in found]


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


def _decode_due(names: NameCodec, state: Iterable[Any]) -> dict[tuple[str, str], Resource]:
    """Rows of :data:`_STATE` in key order whose names are not known: each resource is named by
    its first lease's sealed column (tenant, name, holder, scope), opened once per lease."""
    found: dict[tuple[str, str], Resource] = {}
    row: tuple[Any, ...] | None = None
    res: Resource | None = None
    for t, n, token, sealed, *resource, owner, expires, lease_id in state:
        if token == 0:
            row, res = (t, n, *resource), None
            continue
        tenant, name, holder, scope = names.open_json(sealing.LEASE, t + n, sealed)
        if res is None:
            if row is None or (row[0], row[1]) != (t, n):
                raise StorageError(DAMAGED)  # a lease whose resource's row is gone
            res = found[(tenant, name)] = rows.resource_row(names, tenant, name, row)
            names.known_key(tenant, name, (t, n))  # its expiry's writes need them
        res.leases.append(Lease(holder, token, owner, expires, scope, lease_id))
    return found
