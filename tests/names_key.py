"""The names key of tests that open a storage directly (docs/decisions/0010)."""

import hashlib
import sqlite3

from ledger.keys.names import NameCodec

NAMES = NameCodec(bytes(range(32)))
"""A fixed key: the state tables of a test ledger are sealed as a server's are."""


def unkeyed_fingerprints(conn: sqlite3.Connection, table: str, fingerprint: str) -> None:
    """Store a rewound ledger's fingerprints as before schema step 7 keyed them: the plain
    SHA-256 of ``fingerprint`` (the only one the test wrote), so the migration meets what an
    older ledger held."""
    plain = hashlib.sha256(fingerprint.encode()).digest()
    for column in ("fingerprint", "completed_fingerprint"):
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {column} IS NOT NULL", (plain,))
