"""Operator force-release (docs/decisions/0011-operator-revoke.md): one write transaction.

`tenure lease revoke` opens the ledger beside any running server and commits here directly:
the backend serializes writers, and nothing authoritative is cached between transactions
(0006), so a server's next decision reads the revoke. The unit of work decides with the pure
machine (``leases.revoke``), records one ``revoke`` entry per lease it ends (after any expiry
found on the way, rule 7) and serves the resource's waiters in the order they queued (rule 9),
exactly as a release does. A refusal — unknown resource, no live lease matches — writes nothing.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from ledger.lease import leases
from ledger.lease.batch import Batch
from ledger.lease.calls import Limits
from ledger.lease.decider import Decider
from ledger.lease.leases import EventKind, Outcome, Revocation
from ledger.storage import Storage


@dataclass(frozen=True, slots=True)
class RevokeOrder:
    """What the operator asked: which leases of which resource, by whom and why."""

    tenant: str
    resource: str
    by: str
    reason: str
    holder: str | None = None
    fencing_token: int | None = None


@dataclass(frozen=True, slots=True)
class Revoked:
    """What the transaction did. ``known``: the resource was ever granted; ``tokens``: the
    fencing tokens revoked (empty: nothing matched, nothing written)."""

    known: bool
    tokens: tuple[int, ...] = ()
    holders: tuple[str, ...] = ()
    indexes: tuple[int, ...] = ()
    """The ledger indexes of the revoke entries."""
    next_token: int = 1
    """The fencing token the next grant gets: above every token revoked (rule 2)."""
    operator: str = ""
    """The operator's pseudonym as the entries name it."""
    tree_size: int = 0


def decide_revoke(d: Batch, order: RevokeOrder, now: int) -> Revoked:
    """The unit of work: inside the transaction of batch ``d``, end the leases ``order`` names."""
    now = d.at(now)
    res = d.resource(order.tenant, order.resource)
    if res.max_token == 0:  # no grant ever: the resource is unknown to the ledger
        return Revoked(known=False)
    why = Revocation(order.by, order.reason)
    decision = leases.revoke(res, why, now, order.holder, order.fencing_token)
    ended = [e.lease for e in decision.events if e.kind is EventKind.REVOKE]
    if decision.outcome is not Outcome.RELEASED:
        return Revoked(known=True, next_token=_next(d, res.max_token))  # nothing applied
    first = d.recorder.tree.size + len(decision.events) - len(ended)  # after the expiries
    d.record(res, decision)  # and the grants to waiters it served come after the revokes
    return Revoked(
        known=True,
        tokens=tuple(lease.fencing_token for lease in ended),
        holders=tuple(lease.holder for lease in ended),
        indexes=tuple(range(first, first + len(ended))),
        next_token=_next(d, res.max_token),
        operator=d.recorder.pseudonyms(order.tenant).operator(order.by),
        tree_size=d.recorder.tree.size,
    )


def _next(d: Batch, max_token: int) -> int:
    """The next grant's token (rule 2): above the resource's tokens and the fencing floor."""
    return max(max_token, d.token_floor) + 1


def run_revoke(
    storage: Storage,
    master_secret: bytes,
    order: RevokeOrder,
    now: int,
    limits: Limits | None = None,
    notify: Callable[[str, str], None] | None = None,
) -> Revoked:
    """Run :func:`decide_revoke` in one durable transaction of ``storage``, then wake (through
    ``notify``) the other processes' waiters it granted. ``limits`` give a served waiter its
    lifecycle: the server's own."""
    from ledger.writer.service import VERSIONS

    limits = limits or Limits()
    base = {"deterministic": True, "limits": limits.as_data(), "versions": VERSIONS}
    loop = asyncio.new_event_loop()  # the decider hands local waiters over on it: none here
    try:
        worker = "revoke-" + secrets.token_hex(4)
        decider = Decider(master_secret, limits, base, loop, worker, notify)
        with storage.transaction() as tx:
            decider.begin(tx)
            revoked = decide_revoke(decider.batch, order, now)
        decider.committed()
        return revoked
    finally:
        loop.close()
