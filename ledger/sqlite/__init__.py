"""The SQLite backend of the storage seam (ledger/storage.py); all of tenure's SQL lives here,
opened through ledger/backends.py."""
