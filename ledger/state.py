"""Reading the committed state back at start-up (and after a storage failure)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from ledger.leases import Completion, Lease, Resource
from ledger.merkle import CompactRange

Key = tuple[str, str]


@dataclass(slots=True)
class Committed:
    resources: dict[Key, Resource]
    idempotency: dict[Key, tuple[bytes, dict[str, Any], int]]
    scopes: dict[Key, tuple[int, int]]
    tree: CompactRange


def tree_size(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT max(idx) FROM entries").fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


def node_getter(conn: sqlite3.Connection) -> Any:
    def get(level: int, idx: int) -> bytes:
        sql = "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?"
        row = conn.execute(sql, (level, idx)).fetchone()
        if row is None:
            raise KeyError((level, idx))
        return bytes(row[0])

    return get


def load_state(conn: sqlite3.Connection) -> Committed:
    resources = {(r.tenant, r.name): r for r in _resources(conn)}
    sql = (
        "SELECT tenant, resource, holder, fencing_token, owner_digest, expires_at, scope, lease_id"
    )
    for tenant, name, holder, token, digest, expires, scope, lease_id in conn.execute(
        sql + " FROM leases ORDER BY tenant, resource, fencing_token"
    ):
        lease = Lease(holder, token, bytes(digest), expires, scope, lease_id)
        resources[(tenant, name)].leases.append(lease)
    idempotency = {
        (t, r): (bytes(d), json.loads(a), c)
        for t, r, d, a, c in conn.execute("SELECT * FROM idempotency")
    }
    scopes = {(t, s): (d, b) for t, s, d, b in conn.execute("SELECT * FROM scopes")}
    tree = CompactRange.load(tree_size(conn), node_getter(conn))
    return Committed(resources, idempotency, scopes, tree)


def _resources(conn: sqlite3.Connection) -> list[Resource]:
    found = []
    for row in conn.execute("SELECT * FROM resources"):
        tenant, name, capacity, max_token, end, fingerprint, result, done_at, done_fp = row
        completion = None
        if done_at is not None:
            completion = Completion(json.loads(result), done_at, _blob(done_fp))
        found.append(
            Resource(tenant, name, capacity, max_token, end, _blob(fingerprint), completion)
        )
    return found


def _blob(value: bytes | None) -> bytes | None:
    return None if value is None else bytes(value)
