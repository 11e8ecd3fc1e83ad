"""Where SQLite stores a Merkle tree node (schema step 6, docs/decisions/0016).

A node is the hash of a perfect subtree: ``(level, index)`` covers leaves ``index * 2**level``
to ``(index + 1) * 2**level - 1``, and is complete once its last leaf is appended. Numbering the
nodes in the order they complete — post-order, as a Merkle mountain range numbers them — gives
every node a position that only grows as the log grows: leaf ``n`` completes at ``2n -
popcount(n)``, and the ``level`` subtrees it closes follow it one by one. Keyed by that position,
the nodes a group of appends writes land at the end of the table, on one or two pages, where
keyed by ``(level, index)`` they touched one page per level (~15 per commit on a 2**15 log).
"""

from __future__ import annotations


def node_position(level: int, index: int) -> int:
    """The post-order position of the node ``(level, index)`` (0 for the first leaf)."""
    last = ((index + 1) << level) - 1  # the subtree's last leaf
    return 2 * last - last.bit_count() + level
