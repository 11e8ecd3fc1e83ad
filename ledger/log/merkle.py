"""RFC 9162 Merkle tree over stored perfect subtrees: roots and proof generation.

The server persists the hash of every *perfect* subtree: node ``(level, idx)`` covers leaves
``[idx * 2**level, (idx + 1) * 2**level)`` and level-0 nodes are leaf hashes. Any node of the
RFC 9162 §2.1.1 tree of size n is either such a perfect subtree or lies on the right edge,
covering ``[begin, n)``; a right-edge node is the fold of the O(log n) perfect subtrees that
tile its range (one per set bit of ``n - begin``). So every root and proof below costs
O(log n) node reads for any size, never a walk down to the leaves.

Verification lives apart, in ``verify/rfc9162.py`` (STYLE.md §3); the compact range, shared
with the auditor, in ``verify/compact.py``. Storage is a callable, so this module is pure:
``get(level, idx)`` returns a stored hash or raises KeyError."""

from __future__ import annotations

from verify.compact import CompactRange, NodeGetter, fold, tiling
from verify.rfc9162 import EMPTY_ROOT

__all__ = [
    "CompactRange",
    "NodeGetter",
    "consistency_proof",
    "inclusion_proof",
    "root_at",
]


def root_at(size: int, get: NodeGetter) -> bytes:
    """MTH(D[0:size]) from stored nodes (§2.1.1); EMPTY_ROOT for size 0."""
    _require(size >= 0, f"tree size must be >= 0, got {size}")
    return _range_hash(0, size, get) if size else EMPTY_ROOT


def inclusion_proof(index: int, size: int, get: NodeGetter) -> list[bytes]:
    """PATH(index, D[0:size]) of RFC 9162 §2.1.3.1, leaf-side sibling first.

    Walks down from the root: at each split k (the largest power of two < width) the path goes
    into one child and the other child's hash joins the proof. Only a right sibling can be a
    non-perfect subtree, and only the first one taken, so the cost stays O(log n).
    """
    _require(0 <= index < size, f"leaf index {index} out of range for tree size {size}")
    begin, end, top_down = 0, size, []
    while end - begin > 1:
        k = _split(end - begin)
        if index < begin + k:
            top_down.append(_range_hash(begin + k, end, get))
            end = begin + k
        else:
            top_down.append(_range_hash(begin, begin + k, get))
            begin += k
    return top_down[::-1]


def consistency_proof(first: int, second: int, get: NodeGetter) -> list[bytes]:
    """PROOF(first, D[0:second]) of RFC 9162 §2.1.4.1, bottom-most hash first.

    Empty when ``first == second``. §2.1.4 defines the proof only for ``0 < first``, and
    ``verify/rfc9162.py`` refuses a proof from size 0, so asking for one is an error here too.
    """
    _require(0 <= first <= second, f"need 0 <= first <= second, got first={first}, second={second}")
    _require(first > 0 or second == 0, "no consistency proof from the empty tree (RFC 9162 §2.1.4)")
    begin, end, top_down = 0, second, []
    m, whole = first, True  # `whole`: SUBPROOF's flag b, "the old tree is this very subtree"
    while m != end - begin:
        k = _split(end - begin)
        if m <= k:
            top_down.append(_range_hash(begin + k, end, get))
            end = begin + k
        else:
            top_down.append(_range_hash(begin, begin + k, get))
            begin, m, whole = begin + k, m - k, False
    if not whole:  # SUBPROOF(m, D[m], false) = [MTH(D[m])]; this subtree is perfect
        top_down.append(_range_hash(begin, end, get))
    return top_down[::-1]


def _range_hash(begin: int, end: int, get: NodeGetter) -> bytes:
    """MTH of leaves ``[begin, end)``, a node of the RFC tree: one read if perfect, else a fold."""
    return fold([get(level, idx) for level, idx in tiling(begin, end)])


def _split(width: int) -> int:
    """k of RFC 9162 §2.1.1: the largest power of two smaller than ``width`` (width > 1)."""
    return 1 << ((width - 1).bit_length() - 1)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)
