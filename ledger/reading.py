"""Opening a ledger only to read it (``tenure export``, ``tenure apikey list``).

An auditor exports a read-only backup: a SQLite folder this process cannot write is opened
read-only (``ledger/sqlite/readonly.py``) instead of created, migrated and chmod-ed as a server
opens it; anything else is opened as ``open_storage`` does.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from ledger.storage import (
    ApiKeyRecord,
    KeyRecord,
    Snapshot,
    is_database_url,
    open_storage,
)

__all__ = ["LedgerReader", "open_for_reading"]


class LedgerReader(Protocol):
    """What a reading command asks of a ledger: a part of ``Storage``."""

    def tree_size(self) -> int: ...

    def signing_keys(self) -> list[KeyRecord]: ...

    def api_keys(self) -> list[ApiKeyRecord]: ...

    def export_snapshot(self) -> AbstractContextManager[Snapshot]: ...

    def close(self) -> None: ...


def open_for_reading(location: Path | str) -> LedgerReader:
    """The ledger at ``location``, read-only where its folder or file cannot be written."""
    if is_database_url(location) or _writable(Path(location)):
        return open_storage(location)
    from ledger.sqlite.readonly import ReadOnlyLedger

    return ReadOnlyLedger.open(Path(location))


def _writable(folder: Path) -> bool:
    """Whether this process may write the folder and its database (root on a read-only mount
    may not; ``os.access`` asks the kernel, which knows both)."""
    from ledger.sqlite.schema import DB_NAME

    database = folder / DB_NAME
    return os.access(folder, os.W_OK) and os.access(database, os.W_OK)
