"""Rule 12's stored request (``ledger/keys/idempotency.py``): the key a ledger already holds, an
answer that opens only in its own row, and columns in the order the table has."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ledger.backends import open_storage
from ledger.changes import RememberRequest
from ledger.keys import idempotency
from ledger.keys.names import SealError
from ledger.sqlite.schema import DB_NAME
from tests.names_key import NAMES

REMEMBERED = RememberRequest(
    "tenant-a", "req-0123456789abcdef", b"d" * 32, '{"outcome": "GRANTED"}', 7
)


def test_the_key_is_the_one_earlier_ledgers_stored() -> None:
    """Stored requests are found by these digests: another derivation would make every ledger
    written before it forget its requests (a retry granted twice)."""
    tenant, request = idempotency.key(NAMES, "tenant-a", "req-0123456789abcdef")
    assert tenant.hex() == "639475ccc32e28f30961db4423f2b838"
    assert request.hex() == "5544e7b3766f0ea958d0b48795e65768"
    assert tenant == NAMES.tenant("tenant-a")


def test_a_stored_answer_opens_in_its_own_row_only() -> None:
    row = idempotency.row(NAMES, REMEMBERED)
    assert b"GRANTED" not in row[3] and b"req-" not in b"".join(row[:2])
    record = idempotency.record(NAMES, row)
    assert (record.digest, record.answer, record.created_at) == (
        b"d" * 32,
        {"outcome": "GRANTED"},
        7,
    )
    other = idempotency.key(NAMES, "tenant-a", "req-another-one-0000")
    with pytest.raises(SealError):  # moved to another request's row
        idempotency.record(NAMES, (*other, *row[2:]))


def test_the_columns_are_the_tables_in_its_order(tmp_path: Path) -> None:
    open_storage(tmp_path, names=NAMES).close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        table = [row[1] for row in conn.execute("PRAGMA table_info(idempotency)")]
    assert ", ".join(table) == idempotency.COLUMNS
