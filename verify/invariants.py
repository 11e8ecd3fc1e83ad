"""The lease invariants of DESIGN §2, replayed over a ledger's entries in index order.

Rules checked per (tenant, resource), each flagged with the entry index it concerns:

* fencing tokens of grants strictly increase (rule 2); a grant's ``leaseId`` is its own index;
* no grant finds ``capacity`` leases live (rule 1): a lease is live from its grant until the
  entry that ends it or its ``expiresAt``, whichever comes first (rule 7);
* every later event names a granted, unended lease with its owner digest (rule 3);
* renew, release, complete, scope release and an operator's revoke (decisions/0011) happen
  before the lease's expiry (rule 3), an expire not before it (rule 7);
* no ``expiresAt`` passes ``absoluteExpiresAt`` (rule 5), which is constant within a lifecycle;
* no grant follows a completion in the same lifecycle (rule 10).

Warning (not a violation): a fencing token that skips a value, a grant the export does not hold.

Pure and I/O-free: :class:`Rules` takes decoded :class:`Event` values and reports through the
two callbacks it is given; the audit (``verify.audit``) decides what a report holds. Its state
round-trips through JSON (``state_data``/``restore``), so an incremental checker (the monitor)
resumes exactly where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from typing import Any

__all__ = ["Event", "Flag", "Rules"]

Flag = Callable[[int | None, str, str], None]
"""Records one finding: (entry index, check name, message)."""


@dataclass(slots=True)  # not frozen: a frozen __init__ costs ~1 µs per entry
class Event:
    """The fields of one v1 ledger entry that the rules read."""

    index: int
    kind: str
    time: str
    key: tuple[str, str]
    holder: str
    token: int
    expires: str
    absolute: str
    capacity: int
    owner: str
    lease_id: int
    scope: str | None


@dataclass(slots=True)
class _Lease:
    """A granted lease as its acquire entry recorded it."""

    lease_id: int
    holder: str
    owner: str
    expires: str
    absolute: str
    capacity: int
    scope: str | None


@dataclass(slots=True)
class _Resource:
    max_token: int = 0
    capacity: int = 1
    lifecycle_end: str | None = None
    completed: bool = False
    leases: dict[int, _Lease] = field(default_factory=dict)
    """Granted leases no entry has ended yet, by fencing token (some may be past expiresAt)."""


class Rules:
    """The state of every resource so far; ``apply`` each entry's event in index order."""

    def __init__(self, violation: Flag, warning: Flag) -> None:
        self.violation = violation
        self.warning = warning
        self.resources: dict[tuple[str, str], _Resource] = {}

    def state_data(self) -> list[list[Any]]:
        """Every resource's state as JSON-ready lists (the order ``restore`` reads)."""
        return [
            [
                tenant,
                resource,
                res.max_token,
                res.capacity,
                res.lifecycle_end,
                res.completed,
                leases,
            ]
            for (tenant, resource), res in self.resources.items()
            for leases in ([[token, *astuple(lease)] for token, lease in res.leases.items()],)
        ]

    def restore(self, data: list[list[Any]]) -> None:
        """Take back a ``state_data`` (ValueError/TypeError if it has another shape)."""
        resources: dict[tuple[str, str], _Resource] = {}
        for tenant, resource, max_token, capacity, end, completed, leases in data:
            res = _Resource(int(max_token), int(capacity), end, bool(completed))
            res.leases = {int(row[0]): _Lease(*row[1:]) for row in leases}
            resources[(str(tenant), str(resource))] = res
        self.resources = resources

    def apply(self, ev: Event) -> None:
        res = self.resources.get(ev.key)
        if res is None:
            res = self.resources[ev.key] = _Resource()
        if ev.expires > ev.absolute:  # rule 5 and the lifecycle of §1
            self.flag(ev, "lifecycle", f"expiresAt {ev.expires} > absoluteExpiresAt {ev.absolute}")
        if ev.kind == "acquire":
            self.acquire(res, ev)
        else:
            self.follow(res, ev)

    def acquire(self, res: _Resource, ev: Event) -> None:
        if ev.lease_id != ev.index:
            self.flag(ev, "lease-id", f"a grant's leaseId is its own index, found {ev.lease_id}")
        if ev.token <= res.max_token:  # rule 2
            self.flag(ev, "fencing", f"fencing token {ev.token} <= {res.max_token} granted before")
        elif ev.token != res.max_token + 1:
            message = f"fencing token {ev.token} skips {res.max_token + 1}: a grant not recorded?"
            self.warning(ev.index, "fencing-gap", message)
        res.max_token = max(res.max_token, ev.token)
        if ev.expires <= ev.time:
            self.flag(ev, "expiry", f"granted at {ev.time} a lease expiring at {ev.expires}")
        self.lifecycle(res, ev)
        self.capacity(res, ev)
        lease = _Lease(
            ev.index, ev.holder, ev.owner, ev.expires, ev.absolute, ev.capacity, ev.scope
        )
        res.leases[ev.token] = lease
        res.capacity = ev.capacity

    def lifecycle(self, res: _Resource, ev: Event) -> None:
        """A grant inside the running lifecycle keeps its end; one after it starts a new one."""
        if res.lifecycle_end is None or ev.time >= res.lifecycle_end:
            res.lifecycle_end, res.completed = ev.absolute, False
            return
        if ev.absolute != res.lifecycle_end:
            message = f"absoluteExpiresAt {ev.absolute} in a lifecycle ending {res.lifecycle_end}"
            self.flag(ev, "lifecycle", message)
        if res.completed:  # rule 10: until the lifecycle ends, acquire answers COMPLETED
            self.flag(ev, "completed", "a grant after the lifecycle's work was completed")

    def capacity(self, res: _Resource, ev: Event) -> None:
        """Rule 1: live means not ended by an entry and expiresAt still ahead (rule 7)."""
        live = sum(1 for lease in res.leases.values() if lease.expires > ev.time)
        if live and ev.capacity != res.capacity:
            message = f"capacity {ev.capacity} while {live} leases of capacity {res.capacity} live"
            self.flag(ev, "capacity", message)
        if live >= ev.capacity:
            self.flag(ev, "capacity", f"{live + 1} live leases exceed capacity {ev.capacity}")

    def follow(self, res: _Resource, ev: Event) -> None:
        """renew, release, complete, scope_release, revoke, expire: events of one granted
        lease (a revoke ends it as a release does, without the owner: 0011)."""
        lease = res.leases.get(ev.token)
        if lease is None:
            what = "was never granted" if ev.token > res.max_token else "has already ended"
            self.flag(ev, "not-live", f"{ev.kind} of fencing token {ev.token}, which {what}")
            return
        self.same_lease(lease, ev)
        if ev.kind == "expire":
            if ev.time < lease.expires:  # rule 7: only the server's clock past expiresAt
                self.flag(ev, "early-expire", f"expired at {ev.time}, before {lease.expires}")
        elif ev.time >= lease.expires:  # rule 3: only a live lease renews, releases, completes
            self.flag(ev, "after-expiry", f"{ev.kind} at {ev.time}; lease expired {lease.expires}")
        if ev.kind == "renew":
            lease.expires = ev.expires
            return
        if ev.expires != lease.expires:
            self.flag(ev, "lease-mismatch", f"expiresAt {ev.expires}, lease had {lease.expires}")
        del res.leases[ev.token]
        if ev.kind == "complete":
            res.completed = True

    def same_lease(self, lease: _Lease, ev: Event) -> None:
        if ev.owner != lease.owner:  # rule 3: the digest granted, and no other
            message = f"ownerTokenDigest {ev.owner[:16]}…, granted {lease.owner[:16]}…"
            self.flag(ev, "owner", message)
        if ev.absolute != lease.absolute:
            message = f"absoluteExpiresAt {ev.absolute}, granted with {lease.absolute}"
            self.flag(ev, "lifecycle", message)
        if ev.capacity != lease.capacity:
            self.flag(ev, "capacity", f"capacity {ev.capacity}, granted with {lease.capacity}")
        granted = (lease.lease_id, lease.holder, lease.scope)
        if (ev.lease_id, ev.holder, ev.scope) != granted:
            self.flag(ev, "lease-mismatch", "leaseId, holder or scope differ from the grant's")

    def flag(self, ev: Event, check: str, message: str) -> None:
        self.violation(ev.index, check, message)
