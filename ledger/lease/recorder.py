"""Recording decisions: ledger entries, the Merkle tree, and the statements that make them durable.

For every event of a decision the recorder assigns the next log index, encodes the entry
(``ledger/lease/entries.py``), appends its leaf to the compact range, and lists the changes — entry,
new tree nodes, lease row — that the group committer applies in one transaction with the
resource's row (:func:`resource_change`, which the batch adds when the row changed), so a
fencing token is durable together with the entry that records it (DESIGN §2.2).
It speaks in typed changes (``ledger/changes.py``); the storage backend owns the SQL.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol

from ledger.changes import (
    AppendEntry,
    Change,
    DropLease,
    PutLease,
    PutNodes,
    PutResource,
    SetLeaseExpiry,
)
from ledger.lease.answers import Position
from ledger.lease.entries import Pseudonyms, encode_entry, encode_entry_native
from ledger.lease.leases import Decision, Event, EventKind, Resource
from ledger.log.merkle import CompactRange
from ledger.log.text import b64
from ledger.lru import LRU
from verify.jcs import canonicalize

try:  # built from native/ where a C compiler and OpenSSL's libcrypto were
    from ledger._native import Frontier as NativeFrontier

    HAVE_FRONTIER = True
except ImportError:  # pragma: no cover - the pure-Python install
    HAVE_FRONTIER = False

PSEUDONYM_CACHE = 256
"""Tenants whose pseudonym keys stay derived (two HMACs each to derive again)."""


class Frontier(Protocol):
    """The Merkle frontier the recorder appends to: :class:`CompactRange`, or its native twin."""

    @property
    def size(self) -> int: ...
    def append_entry(self, entry: bytes) -> tuple[bytes, list[tuple[int, int, bytes]]]: ...
    def root(self) -> bytes: ...


@dataclass(slots=True)
class Recorded:
    ops: list[Change]
    position: Position | None = None
    entry: bytes | None = None
    """The exact bytes of the last entry appended (the call's own event)."""
    names: dict[str, str] | None = None
    """The pseudonyms that entry names (``ledger.lease.entries.PSEUDONYM_FIELDS``)."""


class Recorder:
    """Turns decisions into ledger entries and the changes that make them durable.

    Owns the in-memory Merkle frontier (``tree``) and the per-tenant pseudonym keys derived
    from the master secret; it never writes, the group committer does. With ``native`` (where
    ``ledger._native`` is built) entries are written and hashed, and the frontier kept, by
    native code: the same bytes, hashes and nodes (``tests/test_native_record.py``).
    """

    def __init__(self, tree: CompactRange, master_secret: bytes, native: bool = True) -> None:
        self._native = native and HAVE_FRONTIER
        self._encode = encode_entry_native if self._native else encode_entry
        self._tree: Frontier = self._frontier(tree)
        self._master = master_secret
        self.names: LRU[str, Pseudonyms] = LRU(PSEUDONYM_CACHE)
        self._last: Position | None = None
        """The position :meth:`record` last answered: its root is the tree's while the size
        has not moved and the tree was not replaced (the batch's last event is the one the
        commit publishes)."""

    @property
    def tree(self) -> Frontier:
        """The Merkle frontier; replacing it (a reload) forgets the remembered root."""
        return self._tree

    @tree.setter
    def tree(self, tree: CompactRange) -> None:
        self._tree, self._last = self._frontier(tree), None

    def _frontier(self, tree: CompactRange) -> Frontier:
        if self._native:
            return NativeFrontier(tree.size, tree.hashes())
        return tree

    def position(self) -> Position:
        """The tree's size and root after everything recorded so far."""
        last, size = self._last, self._tree.size
        if last is not None and last.tree_size == size:
            return Position(size, last.root_hash)
        return Position(size, b64(self._tree.root()))

    def pseudonyms(self, tenant: str) -> Pseudonyms:
        """The tenant's keyed pseudonyms (DESIGN §4), derived and kept in a bounded cache."""
        return self.names.get(tenant, self._derive)

    def _derive(self, tenant: str) -> Pseudonyms:
        return Pseudonyms.derive(self._master, tenant)

    def record(self, res: Resource, decision: Decision, positioned: bool = True) -> Recorded:
        """Append one entry per event; the changes, the position and the last entry's bytes.

        ``positioned=False`` when nobody answers with the position (a sweep's expiries, a
        waiter queued): the root, a fold of the whole frontier, is then not computed."""
        events = decision.events
        if not events:
            return Recorded([])
        names, tree, encode = self.pseudonyms(res.tenant), self._tree, self._encode
        ops: list[Change] = []
        index, leaf, entry = -1, b"", b""
        for event in events:
            index = tree.size
            if event.kind is EventKind.ACQUIRE:
                event.lease.lease_id = index
            done = _result_digest(res, event) if event.kind is EventKind.COMPLETE else None
            entry = encode(index, event, names, res.name, done)
            leaf, nodes = tree.append_entry(entry)
            ops.append(AppendEntry(index, entry))
            ops.append(PutNodes(tuple(nodes)))
            ops.append(_lease_change(res, event))
        if not positioned:
            return Recorded(ops)
        position = self._last = Position(tree.size, b64(tree.root()), index, b64(leaf))
        entry_names = {
            "tenant": names.tenant,
            "resource": names.resource(res.name),
            "holder": names.holder(events[-1].lease.holder),
        }
        return Recorded(ops, position, entry, entry_names)


def _result_digest(res: Resource, event: Event) -> str | None:
    if event.kind is not EventKind.COMPLETE or res.completion is None:
        return None
    return hashlib.sha256(canonicalize(res.completion.result)).hexdigest()


def _lease_change(res: Resource, event: Event) -> Change:
    lease = event.lease
    tenant, name, token = res.tenant, res.name, lease.fencing_token
    if event.kind is EventKind.ACQUIRE:
        return PutLease(
            tenant,
            name,
            token,
            lease.holder,
            lease.owner_digest,
            lease.expires_at,
            lease.scope,
            lease.lease_id,
        )
    if event.kind is EventKind.RENEW:
        return SetLeaseExpiry(tenant, name, token, lease.expires_at)
    return DropLease(tenant, name, token)


def resource_change(res: Resource) -> PutResource:
    """The resource row as it now stands (the service writes it alone when a lifecycle ends)."""
    done = res.completion
    return PutResource(
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
