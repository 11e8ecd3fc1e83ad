"""Resource names for a watch: entries carry only pseudonyms, the state tables the sealed names.

A watch turns an entry's resource pseudonym back into the name its tenant gave by reading the
tenant's resource names (sealed, docs/decisions/0010) and deriving their pseudonyms. A resource
row is written in the transaction of its first entry and never removed, so after reading the
names at a log size every entry below it is named; a later miss reads them again, once.
"""

from __future__ import annotations

from collections.abc import Callable

from ledger.lease.entries import Pseudonyms

NamesRead = Callable[[str], list[str]]
"""A tenant → the names of its resources (``ledger.backends.open_tenant_names``)."""


class TenantNames:
    """One watch's pseudonym → name map of its tenant's resources."""

    def __init__(self, tenant: str, names: Pseudonyms, read: NamesRead | None) -> None:
        self._tenant, self._names, self._read = tenant, names, read
        self._known: dict[str, str] = {}
        self._read_below = 0  # every entry below this index has its name in _known

    def name_of(self, pseudonym: str, index: int, size: int) -> str | None:
        """The name of the resource entry ``index`` names; ``size`` is the log's size now."""
        known = self._known.get(pseudonym)
        if known is None and self._read is not None and index >= self._read_below:
            self._read_below = size  # read after the size: rows of entries below it exist
            self._known = {self._names.resource(n): n for n in self._read(self._tenant)}
            known = self._known.get(pseudonym)
        return known
