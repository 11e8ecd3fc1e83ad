"""The SQLite backend of the storage seam (ledger/storage.py); all of tenure's SQL lives here."""

from ledger.sqlite.backend import SQLiteStorage, exists

__all__ = ["SQLiteStorage", "exists"]
