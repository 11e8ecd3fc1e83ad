"""The PostgreSQL backend of the storage seam (ledger/storage.py); its SQL lives only here."""

from ledger.postgres.backend import PostgresStorage, exists, is_database_url

__all__ = ["PostgresStorage", "exists", "is_database_url"]
