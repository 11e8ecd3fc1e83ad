"""The hot changes of one write transaction, held back and written in a few statements.

Written one statement each, a batch's entries, nodes, resource and lease rows are four or five
calls into SQLite per event under the ledger's lock. :class:`PendingWrites` keeps them until
the transaction next reads or commits, then writes each kind with multi-row statements (both
resource and lease rows go to ``state``, docs/decisions/0013). Order is kept where it matters:
entries, nodes and resource rows as they came (a later resource row replaces an earlier one);
lease rows inserted, then re-dated, then deleted (a lease's key holds its fencing token, never
reused). Any other change flushes the pending ones first (``ledger/sqlite/store.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import chain

from ledger.changes import (
    AppendEntry,
    Change,
    DropLease,
    PutLease,
    PutNodes,
    PutResource,
    SetLeaseExpiry,
)
from ledger.keys import sealing
from ledger.keys.names import NameCodec
from ledger.sqlite.positions import node_position

Row = tuple[object, ...]
MAX_ROWS = 64
"""Rows per statement; statements are made for powers of two up to it, so few are prepared."""

_ENTRIES = "INSERT INTO entries(idx, leaf) VALUES "
_NODES = "INSERT INTO tree_nodes(pos, hash) VALUES "
_RESOURCES = (
    "INSERT INTO state(tenant, name, sealed, capacity, max_token, lifecycle_end,"
    " fingerprint, result, completed_at, completed_fingerprint, token) VALUES "
)
"""A resource's row of ``state`` (docs/decisions/0013): :func:`ledger.keys.sealing.put_resource`'s
columns and ``token`` 0 — with :data:`_RESOURCE_UPDATE` after the values."""
_RESOURCE_UPDATE = (
    " ON CONFLICT(tenant, name, token) DO UPDATE SET sealed = excluded.sealed,"
    " capacity = excluded.capacity, max_token = excluded.max_token,"
    " lifecycle_end = excluded.lifecycle_end, fingerprint = excluded.fingerprint,"
    " result = excluded.result, completed_at = excluded.completed_at,"
    " completed_fingerprint = excluded.completed_fingerprint"
)
"""A resource's row changes where it is (docs/decisions/0016): every column it sets, set again;
its lease columns are NULL either way. ``INSERT OR REPLACE`` would delete it and append it anew
at the end of the rowid table, its key moved in every index."""
_LEASES = (
    "INSERT INTO state(tenant, name, token, sealed, owner_digest, expires_at, scope, lease_id)"
    " VALUES "
)
"""A lease's row of ``state``: :func:`ledger.keys.sealing.put_lease`'s columns."""
_EXPIRY = "UPDATE state SET expires_at = ? WHERE tenant = ? AND name = ? AND token = ?"
_DROP = "DELETE FROM state WHERE tenant = ? AND name = ? AND token = ?"


class PendingWrites:
    """The held-back rows of one transaction (see module doc)."""

    entries: list[Row]
    nodes: list[Row]
    resources: dict[Row, Row]
    leases: list[Row]
    expiries: list[Row]
    drops: list[Row]

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget everything held back (the transaction ended)."""
        self.entries, self.nodes, self.resources = [], [], {}
        self.leases, self.expiries, self.drops = [], [], []

    def add(self, names: NameCodec, change: Change) -> bool:
        """Hold ``change`` back if it is one of the hot kinds; False if it must be applied now."""
        match change:
            case AppendEntry():
                self.entries.append((change.index, change.leaf))
            case PutNodes():
                self.nodes.extend(node_rows(change.nodes))
            case PutResource():
                row = (*sealing.put_resource(names, change), 0)
                key = row[:2]
                self.resources.pop(key, None)  # a later row of a resource replaces it
                self.resources[key] = row
            case PutLease():
                self.leases.append(sealing.put_lease(names, change))
            case SetLeaseExpiry():
                key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
                self.expiries.append((change.expires_at, *key))
            case DropLease():
                key = sealing.lease_key(names, change.tenant, change.resource, change.fencing_token)
                self.drops.append(key)
            case _:
                return False
        return True

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write everything held back, in the order the module doc gives, and forget it."""
        if self.entries:
            insert_rows(conn, _ENTRIES, self.entries)
        if self.nodes:
            insert_rows(conn, _NODES, self.nodes)
        if self.resources:
            insert_rows(conn, _RESOURCES, list(self.resources.values()), _RESOURCE_UPDATE)
        if self.leases:
            insert_rows(conn, _LEASES, self.leases)
        if self.expiries:
            conn.executemany(_EXPIRY, self.expiries)
        if self.drops:
            conn.executemany(_DROP, self.drops)
        self.clear()


def insert_rows(conn: sqlite3.Connection, head: str, rows: Sequence[Row], tail: str = "") -> None:
    """``head`` (``INSERT … VALUES ``) for every row, up to :data:`MAX_ROWS` per statement, each
    statement ending in ``tail`` (an upsert's clause)."""
    width = len(rows[0])
    for start, count in chunks(len(rows)):
        params = list(chain.from_iterable(rows[start : start + count]))
        conn.execute(statement(head, width, count, tail), params)


def chunks(total: int) -> Iterator[tuple[int, int]]:
    """``(start, count)`` runs covering ``total`` items, each count a power of two ≤ MAX_ROWS."""
    start = 0
    while start < total:
        count = min(MAX_ROWS, 1 << ((total - start).bit_length() - 1))
        yield start, count
        start += count


@lru_cache(maxsize=64)
def statement(head: str, width: int, count: int, tail: str = "") -> str:
    """``head``, :func:`values` and ``tail``, the same string object every time: the driver's
    statement cache hashes a new string (~1-3 KB here) on every execution, a remembered one
    once."""
    return head + values(width, count) + tail


@lru_cache(maxsize=64)
def values(width: int, count: int) -> str:
    """``(?, …), …``: ``count`` groups of ``width`` placeholders."""
    group = "(" + ", ".join("?" * width) + ")"
    return ", ".join([group] * count)


@lru_cache(maxsize=16)
def marks(count: int) -> str:
    """``?, …``: ``count`` placeholders, for ``IN (…)``."""
    return ", ".join("?" * count)


def node_rows(nodes: Sequence[tuple[int, int, bytes]]) -> list[Row]:
    """``tree_nodes`` rows of ``(level, index, hash)`` nodes: each at its post-order position
    (``ledger/sqlite/positions.py``)."""
    return [(node_position(level, index), digest) for level, index, digest in nodes]


NODE_ROW = _NODES + values(2, 1)
"""One tree node's row."""
RESOURCE_ROW = _RESOURCES + values(11, 1) + _RESOURCE_UPDATE
"""One resource row (``ledger/sqlite/store.py``'s single changes)."""
LEASE_ROW = _LEASES + values(8, 1)
"""One lease row."""
