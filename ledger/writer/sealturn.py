"""Whose turn it is to seal a checkpoint for readers, across the processes serving a ledger.

Readers may make the log sign and store a checkpoint at most once per ``SEAL_SPACING``
(``ledger/runtime.py``). A bound kept in each process alone lets N workers seal N a second, so
the turn is shared: each backend offers one (``ledger/sqlite/sealturn.py``: a ``flock`` of the
host; ``ledger/postgres/sealturn.py``: an advisory lock of the database), opened by
``ledger/backends.py``. A turn is taken off the event loop (``take`` blocks meanwhile).
"""

from __future__ import annotations

from typing import Protocol


class SealTurn(Protocol):
    """An exclusive turn to seal, carrying the wall time of the last one (seconds since the
    epoch, by the runtime's clock)."""

    def take(self) -> float:
        """Wait for the turn (blocking); the time the last sealing marked (0.0 if never)."""
        ...

    def give(self, sealed_at: float | None) -> None:
        """End the turn, marking the time this turn sealed (None: it sealed nothing)."""
        ...

    def close(self) -> None:
        """Let go of what the turn keeps open (the process stops serving)."""
        ...


def wait_before(sealed_at: float, spacing: float, now: float) -> float:
    """Seconds to wait so that ``spacing`` separates the last sealing from the next; never more
    than ``spacing`` (a wall clock stepped back must not stall readers)."""
    return max(0.0, min(spacing, sealed_at + spacing - now))
