"""The compact range of RFC 9162 §2.1.1: the perfect subtrees tiling ``[0, size)``.

One implementation for both sides: the server keeps its Merkle frontier in one
(``ledger/log/merkle.py``, ``ledger/lease/recorder.py``) and ``tenure audit`` replays an export
through
one (``verify/audit.py``). Pure: hashes in, hashes out; stored nodes come through ``get``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha256

from verify.rfc9162 import EMPTY_ROOT, NODE_PREFIX, leaf_hash, node_hash

NodeGetter = Callable[[int, int], bytes]


@dataclass
class CompactRange:
    """The right frontier of a tree: the perfect subtrees tiling ``[0, size)``, largest first.

    O(log n) memory. ``append`` returns the perfect nodes the new leaf completes, which are all
    the server must persist for roots and proofs to work at any later size.
    """

    size: int = 0
    _hashes: list[bytes] = field(default_factory=list, repr=False)

    @classmethod
    def empty(cls) -> CompactRange:
        return cls()

    @classmethod
    def load(cls, size: int, get: NodeGetter) -> CompactRange:
        """Rebuild the frontier of a stored tree of ``size`` leaves with O(log n) reads."""
        if size < 0:
            raise ValueError(f"tree size must be >= 0, got {size}")
        return cls(size, [get(level, idx) for level, idx in tiling(0, size)])

    def append(self, leaf_hash: bytes) -> list[tuple[int, int, bytes]]:
        """Add a leaf; return the new perfect nodes ``(level, idx, hash)``, the leaf first.

        Each trailing 1-bit of the old size is a perfect subtree of the same height as the one
        being completed, so they merge, as in a binary counter's carry.
        """
        level, idx, h = 0, self.size, leaf_hash
        new = [(level, idx, h)]
        while idx & 1:
            h = node_hash(self._hashes.pop(), h)
            level, idx = level + 1, idx >> 1
            new.append((level, idx, h))
        self._hashes.append(h)
        self.size += 1
        return new

    def append_entry(self, entry: bytes) -> tuple[bytes, list[tuple[int, int, bytes]]]:
        """Add an entry's leaf: its leaf hash and :meth:`append`'s new nodes."""
        leaf = leaf_hash(entry)
        return leaf, self.append(leaf)

    def hashes(self) -> list[bytes]:
        """The perfect subtrees' hashes, largest first (a copy)."""
        return list(self._hashes)

    def root(self) -> bytes:
        """MTH of the current tree (§2.1.1), EMPTY_ROOT when it has no leaves."""
        return fold(self._hashes) if self._hashes else EMPTY_ROOT


def tiling(begin: int, end: int) -> list[tuple[int, int]]:
    """The perfect subtrees ``(level, idx)`` tiling ``[begin, end)``, largest first.

    ``begin`` must be aligned to the largest power of two not above ``end - begin``, which holds
    for every node of the RFC tree (its left part is always a power of two, §2.1.1).
    """
    nodes = []
    while begin < end:
        level = (end - begin).bit_length() - 1
        nodes.append((level, begin >> level))
        begin += 1 << level
    return nodes


def fold(hashes: list[bytes]) -> bytes:
    """Combine perfect-subtree hashes, largest (leftmost) first, from the right (§2.1.1)."""
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        # node_hash(h, acc), written out: the server folds a root for every answer, ~log2(n)/2
        # nodes each; tests/test_merkle_tree.py checks it against the RFC's MTH.
        acc = sha256(b"".join((NODE_PREFIX, h, acc))).digest()
    return acc
