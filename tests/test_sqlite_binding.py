"""Binding parameters: bytes and None take a registered adapter that leaves them as they are
(``ledger/sqlite/schema.py``), so they bind as BLOB and NULL exactly as before, without the
failed adapter look-up per parameter."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger.sqlite.schema import connect


def test_bytes_and_none_bind_as_blob_and_null(tmp_path: Path) -> None:
    conn = connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE t(a, b, c, d)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?, ?)", (b"\x00\xff", None, 7, "x"))
    kinds = conn.execute("SELECT typeof(a), typeof(b), typeof(c), typeof(d) FROM t").fetchone()
    assert kinds == ("blob", "null", "integer", "text")
    assert conn.execute("SELECT a, b FROM t").fetchone() == (b"\x00\xff", None)


def test_the_adapters_are_registered() -> None:
    """Without them, every bytes or None parameter raises and clears an AttributeError."""
    for kind in (bytes, type(None)):
        assert (kind, sqlite3.PrepareProtocol) in sqlite3.adapters
        value = kind()
        assert sqlite3.adapters[(kind, sqlite3.PrepareProtocol)](value) is value
