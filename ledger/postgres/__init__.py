"""The PostgreSQL backend of the storage seam (ledger/storage.py); its SQL lives only here,
opened through ledger/backends.py."""
