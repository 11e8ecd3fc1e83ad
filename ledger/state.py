"""The committed state the service keeps in memory, as the storage reads it back at start-up
(and after a storage failure): ``Storage.load_live()`` (ledger/storage.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.leases import Resource
from ledger.merkle import CompactRange

Key = tuple[str, str]


@dataclass(slots=True)
class Committed:
    resources: dict[Key, Resource]
    idempotency: dict[Key, tuple[bytes, dict[str, Any], int]]
    scopes: dict[Key, tuple[int, int]]
    tree: CompactRange
