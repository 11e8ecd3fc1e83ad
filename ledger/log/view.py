"""The log as auditors see it (DESIGN §3.4): entries, proofs, signed checkpoints, keys.

Everything here reads through the storage's read side (ledger/storage.py) and sees only committed
(durable) entries, so a checkpoint never covers an entry the disk might lose. Every query costs
O(log n) node reads (``ledger.log.merkle``), whatever the size asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ledger.changes import PutCheckpoint
from ledger.keys.keyring import SigningKey
from ledger.log.checkpoint import checkpoint_body, sign_note
from ledger.log.merkle import consistency_proof, inclusion_proof, root_at
from ledger.log.text import b64, iso
from ledger.log.tiles import Tile, entry_bundle, entry_range, hash_tile
from ledger.lru import LRU
from ledger.storage import CheckpointRecord, Storage, StorageError

MAX_PAGE = 1000
MAX_CHECKPOINTS = 100
FULL_TILES_KEPT = 64
"""Full hash tiles never change; the most asked are kept (8 KiB each) rather than re-read as
256 nodes each time."""


class OutOfRange(ValueError):
    """An index or size outside the durable tree (answered 4xx, naming the parameter)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class SignedCheckpoint:
    origin: str
    tree_size: int
    root_hash: bytes
    timestamp: int
    note: str

    def as_data(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "treeSize": self.tree_size,
            "rootHash": b64(self.root_hash),
            "timestamp": iso(self.timestamp),
            "note": self.note,
        }


class LogReader:
    """The auditor's view of the log: entries, RFC 9162 proofs, signed checkpoints, keys.

    ``origin`` names the log in its checkpoints; ``key`` signs new ones. Sizes and indexes outside
    the durable tree raise :class:`OutOfRange` naming the parameter.
    """

    def __init__(self, storage: Storage, origin: str, key: SigningKey) -> None:
        self.storage = storage
        self.origin = origin
        self.key = key
        self._get = storage.node
        self._full_tiles: LRU[Tile, bytes] = LRU(FULL_TILES_KEPT)

    def size(self) -> int:
        return self.storage.tree_size()

    def root(self, size: int) -> bytes:
        self._check_size("treeSize", size, self.size())
        return root_at(size, self._get)

    def entries(self, start: int, end: int | None = None) -> list[dict[str, Any]]:
        """Entries ``[start, end)``: at most MAX_PAGE of them, ``end`` clamped to the tree size
        (and by default ``start + MAX_PAGE``)."""
        size = self.size()
        if not 0 <= start < size:
            raise OutOfRange("start", f"start must be 0..{size - 1} (tree size {size})")
        if end is None:
            end = start + MAX_PAGE
        if end <= start:
            raise OutOfRange("end", f"end must be more than start ({start})")
        end = min(end, size, start + MAX_PAGE)  # clamped: a page never runs past the tree
        return [
            {"index": idx, "leaf": b64(leaf), "entry": json.loads(leaf)}
            for idx, leaf in self.storage.entries(start, end)
        ]

    def entry(self, index: int) -> bytes | None:
        return self.storage.entry(index)

    def tile(self, tile: Tile) -> bytes:
        """A C2SP hash tile or entry bundle of the durable tree (``ledger.log.tiles``);
        :class:`~ledger.log.tiles.NoSuchTile` if the tree has not grown to it yet."""
        size = self.size()
        if tile.level is not None and tile.full:
            return self._full_tiles.get(tile, lambda wanted: hash_tile(wanted, size, self._get))
        if tile.level is not None:
            return hash_tile(tile, size, self._get)
        start, end = entry_range(tile, size)
        leaves = [leaf for _, leaf in self.storage.entries(start, end)]
        if len(leaves) != tile.width:
            raise StorageError(f"entries {start}..{end - 1} of the durable tree are missing")
        return entry_bundle(leaves)

    def inclusion(self, index: int, size: int) -> dict[str, Any]:
        self._check_size("treeSize", size, self.size())
        if not 0 <= index < size:
            raise OutOfRange("index", f"index must be 0..{size - 1} for treeSize {size}")
        hashes = inclusion_proof(index, size, self._get)
        root = root_at(size, self._get)
        return {"index": index, "treeSize": size, "rootHash": b64(root), "hashes": _b64s(hashes)}

    def consistency(self, first: int, second: int) -> dict[str, Any]:
        self._check_size("second", second, self.size())
        if not 1 <= first <= second:
            raise OutOfRange("first", f"first must be 1..{second} (RFC 9162 §2.1.4)")
        hashes = consistency_proof(first, second, self._get)
        return {
            "first": first,
            "second": second,
            "firstRootHash": b64(root_at(first, self._get)),
            "secondRootHash": b64(root_at(second, self._get)),
            "hashes": _b64s(hashes),
        }

    def latest_checkpoint(self) -> SignedCheckpoint | None:
        return self._signed(self.storage.latest_checkpoint())

    def stored_checkpoint(self, tree_size: int) -> SignedCheckpoint | None:
        """The checkpoint signed at exactly ``tree_size``, if the log ever signed one."""
        return self._signed(self.storage.checkpoint(tree_size))

    def checkpoints(self, start: int, limit: int) -> dict[str, Any]:
        """A page of the stored signed checkpoints of tree size ≥ ``start``, smallest first, at
        most ``limit`` (≤ MAX_CHECKPOINTS); ``next`` is the ``start`` of the next page or None."""
        if not 1 <= limit <= MAX_CHECKPOINTS:
            raise OutOfRange("limit", f"limit must be 1..{MAX_CHECKPOINTS}")
        found = self.storage.checkpoints(start, limit + 1)
        page = [
            {**self._as_signed(record).as_data(), "keyDid": record.key_did}
            for record in found[:limit]
        ]
        following = found[limit].tree_size if len(found) > limit else None
        return {"checkpoints": page, "next": following}

    def checkpoint_signer(self, tree_size: int) -> str:
        """The did of the key that signed the stored checkpoint (the active key if not stored)."""
        found = self.storage.checkpoint(tree_size)
        return self.key.did if found is None else found.key_did

    def _signed(self, record: CheckpointRecord | None) -> SignedCheckpoint | None:
        return None if record is None else self._as_signed(record)

    def _as_signed(self, record: CheckpointRecord) -> SignedCheckpoint:
        return SignedCheckpoint(
            self.origin, record.tree_size, record.root_hash, record.timestamp, record.note
        )

    def checkpoint(self, now: int) -> tuple[SignedCheckpoint, PutCheckpoint | None]:
        """The latest checkpoint, signing a new one (and the statement to store it) if the tree
        grew. Roots come from the append-only stored tree, so no two signed checkpoints can be
        inconsistent with each other (DESIGN §4)."""
        size = self.size()
        latest = self.latest_checkpoint()
        if latest is not None and latest.tree_size == size:
            return latest, None
        root = root_at(size, self._get)
        note = sign_note(
            checkpoint_body(self.origin, size, root), self.origin, self.key.private_key
        )
        signed = SignedCheckpoint(self.origin, size, root, now, note)
        return signed, PutCheckpoint(size, root, now, note, self.key.did)

    def keys(self) -> list[dict[str, Any]]:
        return [
            {
                "id": key.did,
                "did": key.did,
                "verificationMethod": f"{key.did}#{key.multikey}",
                "publicKeyMultibase": key.multikey,
                "type": "Multikey",
                "validFrom": iso(key.valid_from),
                "validUntil": None if key.valid_until is None else iso(key.valid_until),
                "active": key.did == self.key.did,
            }
            for key in self.storage.signing_keys()
        ]

    def _check_size(self, field: str, size: int, durable: int) -> None:
        if not 0 <= size <= durable:
            raise OutOfRange(field, f"{field} must be 0..{durable} (the tree's size)")


def _b64s(hashes: list[bytes]) -> list[str]:
    return [b64(h) for h in hashes]
