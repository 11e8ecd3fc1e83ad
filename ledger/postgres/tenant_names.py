"""PostgreSQL: the names of one tenant's resources, for a watch to name the entries it sends."""

from __future__ import annotations

from collections.abc import Callable

from ledger import rows
from ledger.keys import sealing
from ledger.keys.names import NameCodec
from ledger.postgres.connection import Reader

_RESOURCES = "SELECT tenant, name, sealed FROM resources WHERE tenant = %s"
"""By the primary key's first column, ``tenant``."""


def reader(url: str, names: NameCodec) -> Callable[[str], list[str]]:
    """A tenant → its resources' names, read on a connection of the reader's own."""
    connection = Reader(url)

    def read(tenant: str) -> list[str]:
        found = connection.run(
            lambda conn: conn.execute(_RESOURCES, (names.tenant(tenant),)).fetchall()
        )
        return [rows.named(names, sealing.RESOURCE_NAME, row)[1] for row in found]

    return read
