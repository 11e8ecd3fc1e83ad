"""SQLite: the names of one tenant's resources, for a watch to name the entries it sends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ledger import rows
from ledger.keys import sealing
from ledger.keys.names import NameCodec
from ledger.sqlite.schema import DB_NAME, connect

_RESOURCES = "SELECT tenant, name, sealed FROM state WHERE tenant = ? AND token = 0"
"""A resource's own row (token 0, docs/decisions/0013), by the primary key's first column."""


def reader(data_dir: Path, names: NameCodec) -> Callable[[str], list[str]]:
    """A tenant → its resources' names, read on a connection of the reader's own."""
    conn = connect(data_dir / DB_NAME)

    def read(tenant: str) -> list[str]:
        found = conn.execute(_RESOURCES, (names.tenant(tenant),))
        return [rows.named(names, sealing.RESOURCE_NAME, row)[1] for row in found]

    return read
