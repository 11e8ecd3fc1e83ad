"""Recording decisions: ledger entries, the Merkle tree, and the statements that make them durable.

For every event of a decision the recorder assigns the next log index, encodes the entry
(``ledger/entries.py``), appends its leaf to the compact range, and lists the SQLite statements —
entry, new tree nodes, lease row, resource row — that the group committer applies in one
transaction, so a fencing token is durable together with the entry that records it (DESIGN §2.2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ledger.answers import Position
from ledger.entries import Pseudonyms, b64, encode_entry
from ledger.leases import Decision, Event, EventKind, Resource
from ledger.merkle import CompactRange
from ledger.store import Op
from verify.jcs import canonicalize
from verify.rfc9162 import leaf_hash

_LEASE_KEY = "WHERE tenant = ? AND resource = ? AND fencing_token = ?"


@dataclass(slots=True)
class Recorded:
    ops: list[Op]
    position: Position | None = None
    entry: bytes | None = None
    """The exact bytes of the last entry appended (the call's own event)."""


class Recorder:
    def __init__(self, tree: CompactRange, master_secret: bytes) -> None:
        self.tree = tree
        self._master = master_secret
        self._names: dict[str, Pseudonyms] = {}

    def position(self) -> Position:
        return Position(self.tree.size, b64(self.tree.root()))

    def pseudonyms(self, tenant: str) -> Pseudonyms:
        names = self._names.get(tenant)
        if names is None:
            names = self._names[tenant] = Pseudonyms.derive(self._master, tenant)
        return names

    def record(self, res: Resource, decision: Decision) -> Recorded:
        if not decision.events:
            return Recorded([])
        names = self.pseudonyms(res.tenant)
        ops: list[Op] = []
        index, leaf, entry = -1, b"", b""
        for event in decision.events:
            index = self.tree.size
            if event.kind is EventKind.ACQUIRE:
                event.lease.lease_id = index
            entry = encode_entry(index, event, names, res.name, _result_digest(res, event))
            leaf = leaf_hash(entry)
            ops.append(("INSERT INTO entries(idx, leaf) VALUES (?, ?)", (index, entry)))
            ops.extend(
                ("INSERT INTO tree_nodes VALUES (?, ?, ?)", node) for node in self.tree.append(leaf)
            )
            ops.append(_lease_op(res, event))
        ops.append(_resource_op(res))
        position = Position(self.tree.size, b64(self.tree.root()), index, b64(leaf))
        return Recorded(ops, position, entry)


def _result_digest(res: Resource, event: Event) -> str | None:
    if event.kind is not EventKind.COMPLETE or res.completion is None:
        return None
    return hashlib.sha256(canonicalize(res.completion.result)).hexdigest()


def _lease_op(res: Resource, event: Event) -> Op:
    lease = event.lease
    where = (res.tenant, res.name, lease.fencing_token)
    if event.kind is EventKind.ACQUIRE:
        row = (*where, lease.holder, lease.owner_digest, lease.expires_at, lease.scope)
        return "INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (*row, lease.lease_id)
    if event.kind is EventKind.RENEW:
        return f"UPDATE leases SET expires_at = ? {_LEASE_KEY}", (lease.expires_at, *where)
    return f"DELETE FROM leases {_LEASE_KEY}", where


def _resource_op(res: Resource) -> Op:
    done = res.completion
    row = (
        res.tenant,
        res.name,
        res.capacity,
        res.max_token,
        res.lifecycle_end,
        res.fingerprint,
        None if done is None else json.dumps(done.result),
        None if done is None else done.completed_at,
        None if done is None else done.fingerprint,
    )
    return "INSERT OR REPLACE INTO resources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row
