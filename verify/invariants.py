"""The lease invariants of DESIGN §2, replayed over a ledger's entries in index order.

Rules checked, each flagged with the entry index it concerns:

* entries' times never go backwards in index order (DESIGN §6, ``time-order``): liveness is
  judged at each entry's own time, so a backdated entry could otherwise make room for a grant;

Per (tenant, resource):

* fencing tokens of grants strictly increase (rule 2); a grant's ``leaseId`` is its own index;
* no grant finds ``capacity`` leases live (rule 1): a lease is live from its grant until the
  entry that ends it or its ``expiresAt``, whichever comes first (rule 7);
* every later event names a granted, unended lease with its owner digest (rule 3);
* renew, release, complete, scope release and an operator's revoke (decisions/0011) happen
  before the lease's expiry (rule 3), an expire not before it (rule 7), none before the grant;
* no ``expiresAt`` passes ``absoluteExpiresAt`` (rule 5), which is constant within a lifecycle;
* no grant follows a completion in the same lifecycle (rule 10).

Warning (not a violation): a fencing token that skips a value, a grant the export does not hold.

Pure and I/O-free: :class:`Rules` takes decoded :class:`Event` values and reports through the
two callbacks it is given; the audit (``verify.audit``) decides what a report holds. Its state
round-trips through JSON (``state_data``/``restore``), so an incremental checker (the monitor)
resumes exactly where it stopped. ``forget_ended`` bounds that state by what is live: a resource
with no lease left and no running lifecycle shrinks to its highest fencing token, and only the
``keep`` most recently ended ones are remembered at all.
"""

from __future__ import annotations

import itertools
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
    granted: str
    """The grant's time: no later event of the lease is dated before it."""


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
        self.dormant: dict[tuple[str, str], int] = {}
        """Ended resources' highest fencing tokens, the most recently ended last."""
        self.last_time = ""
        self.last_index: int | None = None
        """The latest entry time seen so far, and the index of the entry that carried it."""

    def state_data(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (the shape ``restore`` reads)."""
        return {
            "time": self.last_time,
            "index": self.last_index,
            "resources": self._resource_data(),
            "dormant": [
                [tenant, resource, token] for (tenant, resource), token in self.dormant.items()
            ],
        }

    def _resource_data(self) -> list[list[Any]]:
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

    def restore(self, data: dict[str, Any]) -> None:
        """Take back a ``state_data`` (ValueError/TypeError/KeyError if it has another shape)."""
        resources: dict[tuple[str, str], _Resource] = {}
        for tenant, resource, max_token, capacity, end, completed, leases in data["resources"]:
            res = _Resource(int(max_token), int(capacity), end, bool(completed))
            res.leases = {int(row[0]): _Lease(*row[1:]) for row in leases}
            resources[(str(tenant), str(resource))] = res
        dormant = {(str(t), str(r)): int(token) for t, r, token in data["dormant"]}
        index = data["index"]
        self.last_time, self.last_index = str(data["time"]), None if index is None else int(index)
        self.resources, self.dormant = resources, dormant

    def forget_ended(self, keep: int | None = None) -> None:
        """Shrink each resource with no lease left and no running lifecycle to its highest
        fencing token; remember only the ``keep`` most recently ended of those (every one if
        None: the checks stay exact, as an entry that finds its resource shrunk is judged as it
        would have been — short of one already flagged ``time-order``)."""
        now, dormant = self.last_time, self.dormant
        ended = [
            key
            for key, res in self.resources.items()
            if not res.leases and (res.lifecycle_end is None or res.lifecycle_end <= now)
        ]
        for key in ended:
            dormant.pop(key, None)
            dormant[key] = self.resources.pop(key).max_token
        if keep is not None:
            for key in list(itertools.islice(dormant, max(0, len(dormant) - keep))):
                del dormant[key]

    def apply(self, ev: Event) -> None:
        if ev.time < self.last_time:  # DESIGN §6: liveness is judged at each entry's time
            message = f"time {ev.time} is before {self.last_time} of entry {self.last_index}"
            self.flag(ev, "time-order", message)
        else:
            self.last_time, self.last_index = ev.time, ev.index
        res = self.resources.get(ev.key)
        if res is None:
            res = self.resources[ev.key] = _Resource(self.dormant.pop(ev.key, 0))
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
            ev.index, ev.holder, ev.owner, ev.expires, ev.absolute, ev.capacity, ev.scope, ev.time
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
        if ev.time < lease.granted:
            self.flag(ev, "before-grant", f"{ev.kind} at {ev.time}, granted at {lease.granted}")
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
        if not res.leases:
            res.leases = {}  # an emptied dict keeps its table; a new one has none
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
