"""PostgreSQL reads: the SQL of every read, as methods the backend's classes inherit.

:class:`Reads` holds what every reader asks; :class:`StateReads` the state a decision reads (the
write transaction), :class:`LoopReads` the loop thread's and :class:`SnapshotReads` an export's.
A class that inherits them says only how a read reaches its connection (``_run``: the loop's
reader reconnects once after the server dropped it) and, for the state, which names codec opens
the rows (``_codec``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ledger import rows
from ledger.keys import idempotency, sealing
from ledger.keys.names import NameCodec
from ledger.lease.leases import Resource
from ledger.postgres.connection import Conn
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

T = TypeVar("T")
Params = Sequence[object]

_CHECKPOINT = f"SELECT {rows.CHECKPOINT_COLUMNS} FROM checkpoints"
_CHECKPOINTS = (
    _CHECKPOINT + " WHERE tree_size >= %s AND tree_size <= %s ORDER BY tree_size LIMIT %s"
)
_RESOURCE = f"SELECT {rows.RESOURCE_COLUMNS} FROM resources"
_LEASE = f"SELECT {rows.LEASE_COLUMNS} FROM leases"
# A batch's keys, each looked up by itself: one plain index scan per key (``OFFSET 0`` and
# ``LIMIT 1`` keep the planner from flattening the subquery). On a busy table not yet analyzed,
# ``tenant = %s AND resource = ANY(%s)`` was planned as a bitmap scan of the tenant's whole
# index, filtered after: every dead lease row of the tenant read once per group, never marked
# dead (a bitmap scan sets no hints) — 4.7 ms a group of 60 ten seconds into a run (0042).
RESOURCES_OF = (
    "SELECT r.* FROM unnest(%b::bytea[]) AS u(name), LATERAL"
    f" (SELECT {rows.RESOURCE_COLUMNS} FROM resources"
    " WHERE tenant = %s AND resources.name = u.name OFFSET 0) AS r"
)
"""The resources of one tenant's name digests (parameters: the digests, the tenant)."""
LEASES_OF = (
    "SELECT l.* FROM unnest(%b::bytea[]) AS u(resource), LATERAL"
    f" (SELECT {rows.LEASE_COLUMNS} FROM leases"
    " WHERE tenant = %s AND leases.resource = u.resource OFFSET 0) AS l"
    " ORDER BY l.fencing_token"
)
"""Their leases, by fencing token (parameters as :data:`RESOURCES_OF`); ``rows.resources_of``
reads both."""
WAITED_OF = (
    "SELECT w.resource FROM unnest(%b::bytea[]) AS u(resource), LATERAL (SELECT resource FROM"
    " waiters WHERE tenant = %s AND waiters.resource = u.resource AND answer IS NULL LIMIT 1)"
    " AS w"
)
"""Which of them have a queued waiter, by ``waiters_queue`` (parameters as above)."""
_REQUEST = f"SELECT {idempotency.COLUMNS} FROM idempotency WHERE tenant = %s AND request_id = %s"


class Reads:
    """The reads of the log every reader asks for."""

    def _run(self, read: Callable[[Conn], T]) -> T:
        """``read`` on the connection to read on."""
        raise NotImplementedError

    def _codec(self) -> NameCodec:
        """The names codec that finds and opens the rows of the state tables."""
        raise NotImplementedError

    def _one(self, sql: str, params: Params = ()) -> Any:
        return self._run(lambda conn: conn.execute(sql, params).fetchone())

    def _all(self, sql: str, params: Params = ()) -> list[Any]:
        return self._run(lambda conn: conn.execute(sql, params).fetchall())

    def tree_size(self) -> int:
        row = self._one("SELECT max(idx) FROM entries")
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def node(self, level: int, index: int) -> bytes:
        row = self._one("SELECT hash FROM tree_nodes WHERE level = %s AND idx = %s", (level, index))
        if row is None:
            raise KeyError((level, index))
        return bytes(row[0])

    def entry(self, index: int) -> bytes | None:
        row = self._one("SELECT leaf FROM entries WHERE idx = %s", (index,))
        return None if row is None else bytes(row[0])

    def latest_checkpoint(self) -> CheckpointRecord | None:
        row = self._one(_CHECKPOINT + " ORDER BY tree_size DESC LIMIT 1")
        return None if row is None else rows.checkpoint_row(row)

    def signing_keys(self) -> list[KeyRecord]:
        sql = "SELECT did, public_key, multikey, valid_from, valid_until FROM signing_keys"
        found = self._all(sql + " ORDER BY valid_from, did")
        return [KeyRecord(did, bytes(pub), mk, start, end) for did, pub, mk, start, end in found]

    def log_id(self) -> str:
        row = self._one("SELECT value FROM meta WHERE key = 'log_id'")
        assert row is not None, "the ledger has no log_id (schema.py sets it)"
        return str(row[0])

    def api_key_tenant(self, digest: bytes) -> str | None:
        row = self._one("SELECT tenant FROM api_keys WHERE key_digest = %s", (digest,))
        return None if row is None else str(row[0])

    def fencing_floor(self) -> int:
        row = self._one("SELECT value FROM meta WHERE key = 'fencing_floor'")
        return 0 if row is None else int(row[0])


LIVE_LEASES = "SELECT count(*) FROM leases WHERE expires_at > %s"
LISTING_BOUND = "SELECT name FROM resources WHERE tenant = %s AND name > %s ORDER BY name"
"""The ``scan``-th resource after a listing's position, by the resources' primary key."""
LISTING = (
    "SELECT l.tenant, l.resource, l.sealed, l.fencing_token, l.owner_digest, l.expires_at,"
    " l.lease_id, r.capacity FROM leases AS l JOIN resources AS r"
    " ON r.tenant = l.tenant AND r.name = l.resource WHERE l.tenant = %s AND l.resource > %s"
    " AND l.expires_at > %s"
)
"""The live leases after it, by the leases' primary key (``rows.listed`` reads them)."""
_IN_ORDER = " ORDER BY l.resource, l.fencing_token"


class LoopReads(Reads):
    """What the loop thread reads outside a transaction: pages of the log, keys, gauges."""

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        sql = "SELECT idx, leaf FROM entries WHERE idx >= %s AND idx < %s ORDER BY idx"
        return [(int(idx), bytes(leaf)) for idx, leaf in self._all(sql, (start, end))]

    def checkpoint(self, tree_size: int) -> CheckpointRecord | None:
        row = self._one(_CHECKPOINT + " WHERE tree_size = %s", (tree_size,))
        return None if row is None else rows.checkpoint_row(row)

    def checkpoints(self, start: int, limit: int) -> list[CheckpointRecord]:
        found = self._all(_CHECKPOINTS, (start, 2**63 - 1, limit))
        return [rows.checkpoint_row(row) for row in found]

    def api_keys(self) -> list[ApiKeyRecord]:
        sql = "SELECT key_digest, tenant, name, created_at FROM api_keys ORDER BY created_at"
        return [ApiKeyRecord(bytes(d), t, n, c) for d, t, n, c in self._all(sql)]

    def live_leases(self, now: int) -> int:
        row = self._one(LIVE_LEASES, (now,))
        return 0 if row is None else int(row[0])

    def queued_waiters(self) -> int:
        row = self._one("SELECT count(*) FROM waiters WHERE answer IS NULL")
        return 0 if row is None else int(row[0])

    def live_resources(self, tenant: str, after: bytes, now: int, scan: int) -> LeaseScan:
        """The tenant's resources with leases live at ``now`` among its next ``scan`` after
        ``after``, in digest order; ``next`` is the last of those ``scan`` if there may be more."""
        names = self._codec()
        digest = names.tenant(tenant)
        last = self._one(LISTING_BOUND + " LIMIT 1 OFFSET %s", (digest, after, scan - 1))
        if last is None:
            found = self._all(LISTING + _IN_ORDER, (digest, after, now))
            return LeaseScan(rows.listed(names, found), None)
        up_to = " AND l.resource <= %s" + _IN_ORDER
        found = self._all(LISTING + up_to, (digest, after, now, last[0]))
        return LeaseScan(rows.listed(names, found), bytes(last[0]))


class SnapshotReads(Reads):
    """An export's reads: the whole log streamed, as of the snapshot's first read."""

    def entries(self, end: int) -> Iterator[tuple[int, bytes]]:
        """Entries ``[0, end)`` through a server-side cursor: memory stays flat for any ledger."""
        sql = "SELECT idx, leaf FROM entries WHERE idx < %s ORDER BY idx"
        with self._run(lambda conn: conn.cursor(name="tenure_export")) as cur:
            cur.itersize = 2000
            for idx, leaf in cur.execute(sql, (end,)):
                yield int(idx), bytes(leaf)

    def checkpoints(self, up_to: int) -> Iterator[CheckpointRecord]:
        found = self._all(_CHECKPOINTS, (0, up_to, None))
        return iter([rows.checkpoint_row(row) for row in found])


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


class StateReads(Reads):
    """The state a decision reads inside the write transaction; names are looked up by their
    digests and opened from their sealed columns (``ledger/keys/sealing.py``)."""

    def highest_token(self) -> int:
        row = self._one("SELECT max(max_token) FROM resources")
        return 0 if row is None or row[0] is None else int(row[0])

    def request(self, tenant: str, request_id: str) -> RequestRecord | None:
        names = self._codec()
        row = self._one(_REQUEST, idempotency.key(names, tenant, request_id))
        return None if row is None else idempotency.record(names, row)

    def resource(self, tenant: str, name: str) -> Resource | None:
        names = self._codec()
        key = sealing.resource_key(names, tenant, name)
        row = self._one(_RESOURCE + " WHERE tenant = %s AND name = %s", key)
        leases = self._all(
            _LEASE + " WHERE tenant = %s AND resource = %s ORDER BY fencing_token", key
        )
        if row is None:
            if leases:
                raise StorageError(DAMAGED)
            return None
        found = rows.resource_row(names, tenant, name, row)
        found.leases.extend(rows.lease_row(names, lease) for lease in leases)
        return found

    def resources(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Resource]:
        """The resources of ``keys`` that exist, with their leases: two round trips per tenant
        for a whole batch, where :meth:`resource` takes two per resource. A lease whose
        resource row is gone is a damaged ledger: :class:`StorageError`, never a fresh one."""
        names = self._codec()
        wanted, by_tenant = sealing.resource_keys(names, keys)
        found: dict[tuple[str, str], Resource] = {}
        for t, digests in by_tenant.items():
            read = self._all(RESOURCES_OF, (digests, t)), self._all(LEASES_OF, (digests, t))
            found.update(rows.resources_of(names, wanted, t, *read))
        return found

    def expired(self, now: int, limit: int) -> dict[tuple[str, str], Resource]:
        """The oldest expiries' resources: their names from the leases' sealed columns, then
        read as :meth:`resources` reads a batch's."""
        found = self._all(EXPIRED_LEASES, (now, limit))
        return self.resources(rows.lease_names(self._codec(), found))

    def ended_lifecycles(self, now: int, limit: int) -> list[tuple[str, str]]:
        found = self._all(ENDED_LIFECYCLES, (now, limit))
        return [rows.named(self._codec(), sealing.RESOURCE_NAME, row) for row in found]

    def due_scopes(self, now: int, limit: int) -> list[tuple[str, str]]:
        found = self._all(DUE_SCOPES, (now, limit))
        return [rows.named(self._codec(), sealing.SCOPE, row) for row in found]

    def scope_resources(self, tenant: str, scope: str) -> list[str]:
        names = self._codec()
        found = self._all(SCOPE_RESOURCES, sealing.scope_key(names, tenant, scope))
        return sorted(name for _, name in rows.lease_names(names, found))

    def waiters(self, tenant: str, resource: str) -> list[WaiterRecord]:
        """The resource's waiters not yet granted, FIFO (``seq``)."""
        names = self._codec()
        found = self._all(WAITERS, sealing.resource_key(names, tenant, resource))
        return [rows.waiter_row(names, row) for row in found]

    def waiter(self, waiter_id: str) -> WaiterRecord | None:
        row = self._one(_WAITER + " WHERE waiter_id = %s", (waiter_id,))
        return None if row is None else rows.waiter_row(self._codec(), row)

    def waiter_workers(self) -> list[str]:
        return [str(w) for (w,) in self._all("SELECT DISTINCT worker FROM waiters")]
