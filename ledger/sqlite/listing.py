"""SQLite: a tenant's live leases, one bounded step at a time (``Storage.live_resources``).

A resource's rows of ``state`` are keyed by its name's digest (docs/decisions/0010, 0013), so
a listing walks the tenant's resources in digest order: first the ``scan``-th resource row
after the position (by the key's index, without reading a row), then the live leases up to it,
each with its resource's capacity. The names come back out of the leases' sealed columns.
"""

from __future__ import annotations

import sqlite3

from ledger import rows
from ledger.names import NameCodec
from ledger.storage import LeaseScan

_BOUND = (
    "SELECT name FROM state WHERE tenant = ? AND name > ? AND token = 0"
    " ORDER BY name LIMIT 1 OFFSET ?"
)
_LIVE = (
    "SELECT l.tenant, l.name, l.sealed, l.token, l.owner_digest, l.expires_at, l.lease_id,"
    " r.capacity FROM state AS l JOIN state AS r"
    " ON r.tenant = l.tenant AND r.name = l.name AND r.token = 0"
    " WHERE l.tenant = ? AND l.name > ? AND l.token > 0 AND l.expires_at > ?"
)
_IN_ORDER = " ORDER BY l.name, l.token"


def live_resources(
    conn: sqlite3.Connection, names: NameCodec, tenant: str, after: bytes, now: int, scan: int
) -> LeaseScan:
    """The tenant's resources with leases live at ``now`` among its next ``scan`` after
    ``after``; ``next`` is the last of those ``scan`` if there may be more."""
    digest = names.tenant(tenant)
    last = conn.execute(_BOUND, (digest, after, scan - 1)).fetchone()
    if last is None:
        found = conn.execute(_LIVE + _IN_ORDER, (digest, after, now))
        return LeaseScan(rows.listed(names, found), None)
    found = conn.execute(_LIVE + " AND l.name <= ?" + _IN_ORDER, (digest, after, now, last[0]))
    return LeaseScan(rows.listed(names, found), bytes(last[0]))
