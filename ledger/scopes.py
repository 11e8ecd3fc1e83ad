"""Rule 13's index: which resources hold leases in each (tenant, scope), so the resume packet,
a scope release and the dead-man switch touch only those."""

from __future__ import annotations

from ledger.leases import Lease, Resource

Key = tuple[str, str]


class ScopeIndex:
    def __init__(self) -> None:
        self._names: dict[Key, set[str]] = {}

    def track(self, res: Resource, lease: Lease, live: bool) -> None:
        """Call after every event; ``live`` is whether the event leaves the lease live."""
        if lease.scope is None:
            return
        key = (res.tenant, lease.scope)
        if live:
            self._names.setdefault(key, set()).add(res.name)
        elif key in self._names and all(held.scope != lease.scope for held in res.leases):
            self._names[key].discard(res.name)  # the resource holds nothing more in the scope
            if not self._names[key]:
                del self._names[key]

    def names(self, tenant: str, scope: str) -> list[str]:
        return sorted(self._names.get((tenant, scope), ()))

    def take(self, tenant: str, scope: str) -> list[str]:
        """The scope's resources, forgetting them: the caller is ending every lease in it."""
        return sorted(self._names.pop((tenant, scope), ()))
