"""The fencing floor: after a restore, every fencing token granted is above every token the lost
log handed out (docs/decisions/0040).

A copy of B entries whose lost log had reached S entries lost at most S - B grants (a grant is
one entry), so no token handed out after the copy was taken is above the copy's highest token
(its resources' and its floor's) plus S - B. That sum is the floor; the lease machine grants
above it (rule 2 of ``ledger/lease/leases.py``), and it only ever rises.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.changes import RaiseFencingFloor
from ledger.storage import Storage, StorageError

__all__ = ["Floor", "FloorRefused", "raise_floor"]


class FloorRefused(StorageError):
    """The log size given is smaller than the ledger: no floor can be derived from it."""


@dataclass(frozen=True, slots=True)
class Floor:
    """What :func:`raise_floor` found and set."""

    entries: int
    """B: the entries the ledger holds."""
    highest: int
    """The highest token the ledger knows: its resources' and its floor's before."""
    floor: int
    """The floor now: every later grant's token is above it."""


def raise_floor(storage: Storage, log_size: int) -> Floor:
    """Raise the ledger's fencing floor above every token a log of ``log_size`` entries can
    have handed out beyond this ledger; a ledger that lost nothing (``log_size`` equal to its
    size) keeps its floor. :class:`FloorRefused` if ``log_size`` is below the ledger's size."""
    with storage.transaction() as tx:
        entries = tx.tree_size()
        if log_size < entries:
            raise FloorRefused(
                f"--log-size {log_size} is below the {entries} entries this ledger holds: give"
                " the size the lost log had reached, at least the ledger's own"
            )
        before = tx.fencing_floor()
        highest = max(tx.highest_token(), before)
        floor = highest + (log_size - entries) if log_size > entries else before
        if floor > before:
            tx.apply(RaiseFencingFloor(floor))
    return Floor(entries, highest, floor)
