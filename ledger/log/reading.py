"""What a reading command asks of a ledger (``tenure export``, ``tenure apikey list``): a part
of ``Storage`` that a read-only copy offers too (``ledger/backends.py``'s ``open_for_reading``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from ledger.storage import ApiKeyRecord, KeyRecord, Snapshot

__all__ = ["LedgerReader"]


class LedgerReader(Protocol):
    """What a reading command asks of a ledger: a part of ``Storage``."""

    def tree_size(self) -> int: ...

    def signing_keys(self) -> list[KeyRecord]: ...

    def api_keys(self) -> list[ApiKeyRecord]: ...

    def export_snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def close(self) -> None: ...
