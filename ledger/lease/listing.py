"""A tenant's live leases, a page at a time (``GET /api/v1/leases``, docs/decisions/0034).

Names are sealed at rest and found by keyed digest (docs/decisions/0010), so no index answers
"names starting with": a page walks the tenant's resources in digest order, a bounded step at a
time (``Storage.live_resources``), opens the live leases' names and keeps what the filters
match. It stops at ``limit`` resources or after :data:`SCAN_BUDGET` resources looked at, and
says where the next page goes on. A grant or release never moves a resource in that order, so
between two pages none is listed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.lease.answers import lease_view
from ledger.lease.leases import Lease
from ledger.storage import Listed, Storage

SCAN_BUDGET = 1024
"""The most resources one page looks at, listed or not: what bounds a page's reads and AEAD
opens when the filters match little (the page then says where to go on)."""


@dataclass(frozen=True, slots=True)
class Filters:
    """What a listing keeps: a resource name's prefix, a scope, a holder label (None: any)."""

    prefix: str | None = None
    scope: str | None = None
    holder: str | None = None

    def leases(self, listed: Listed) -> tuple[Lease, ...]:
        """The leases of ``listed`` that match (none if its name does not)."""
        if self.prefix is not None and not listed.name.startswith(self.prefix):
            return ()
        return tuple(lease for lease in listed.leases if self._matches(lease))

    def _matches(self, lease: Lease) -> bool:
        scope_ok = self.scope is None or lease.scope == self.scope
        return scope_ok and (self.holder is None or lease.holder == self.holder)


@dataclass(frozen=True, slots=True)
class Page:
    """The resources listed, as the answer shows them, and where the next page starts (None:
    this was the last)."""

    items: list[dict[str, Any]]
    next: bytes | None


def page(
    storage: Storage, tenant: str, filters: Filters, now: int, limit: int, after: bytes = b""
) -> Page:
    """Up to ``limit`` of the tenant's resources with leases live at ``now`` that ``filters``
    match, after position ``after``."""
    items: list[dict[str, Any]] = []
    step, looked = max(64, min(limit, 1024)), 0
    position: bytes | None = after
    while position is not None and looked < SCAN_BUDGET:
        scan = storage.live_resources(tenant, position, now, step)
        looked += step
        for at, listed in enumerate(scan.found):
            leases = filters.leases(listed)
            if not leases:
                continue
            items.append(item(listed, leases))
            if len(items) == limit:
                done = scan.next is None and at == len(scan.found) - 1
                return Page(items, None if done else listed.position)
        position = scan.next
    return Page(items, position)


def item(listed: Listed, leases: tuple[Lease, ...]) -> dict[str, Any]:
    """One resource as listed: like ``get``'s answer, its holders (for capacity 1 also the
    holder's fields beside them); never an owner token or its digest."""
    holders = [holder_view(lease) for lease in leases]
    shown: dict[str, Any] = {"resource": listed.name, "capacity": listed.capacity}
    if listed.capacity == 1:
        shown.update(holders[0])
    return shown | {"holders": holders}


def holder_view(lease: Lease) -> dict[str, Any]:
    view = lease_view(lease) | {"leaseId": lease.lease_id}
    return view if lease.scope is None else view | {"scope": lease.scope}
