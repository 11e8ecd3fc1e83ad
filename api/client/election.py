"""Leader election on one lease of capacity 1, as etcd's ``concurrency.Election`` and
Curator's ``LeaderLatch`` do it: campaign (a blocking wait, first come first served), lead while
the lease is renewed in the background (``client.lease``'s keeper notices a loss), resign by
releasing. The term is the lease's fencing token, so every later leader's term is higher and a
store that checks it refuses a deposed leader. Observing reads ``get``: no server code of its
own."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from api.client.answers import LeaseAnswer
from api.client.errors import LeaseHeld
from api.client.keeper import OnLost
from verify.defaults import WAIT_MAX_SECONDS

if TYPE_CHECKING:
    from api.client.held import Lease
    from api.client.sync import Client


@dataclass(frozen=True, slots=True)
class Leader:
    """Who leads an election: its holder label, its term (fencing token) and lease expiry."""

    holder: str
    term: int
    expires_at: str | None


def leader_of(answer: LeaseAnswer) -> Leader | None:
    """The leader a ``get`` of the election's lease names; None when nobody holds it."""
    if answer.outcome != "HOLDING" or answer.fencing_token is None:
        return None
    return Leader(str(answer.data.get("holder")), answer.fencing_token, answer.expires_at)


def pause_after(held: LeaseHeld, remaining: float | None) -> float:
    """Seconds to wait before campaigning again after ``held``: none when the server already
    waited; the server's backoff when it could not queue the call (the same holder label still
    leads, from an earlier run), never past the campaign's ``remaining`` time."""
    data = held.data
    if not data.get("sameHolderLabel"):
        return 0.0
    pause = float((data.get("backoff") or {}).get("waitMs", 1000)) / 1000
    return pause if remaining is None else max(0.0, min(pause, remaining))


class Election:
    """One candidate in the election ``name``. ``with client.elect(name, holder) as leader:``
    campaigns until it leads, then runs the block as leader (``leader.term`` to pass to the
    store), renewing in the background, and resigns on exit. ``leader()`` and ``observe()``
    read who leads without campaigning. After a loss (``lost``; ``on_lost`` called from the
    renewal thread) leaving the block raises ``LeaseLost``, as ``client.lease`` does."""

    def __init__(
        self,
        client: Client,
        name: str,
        holder: str,
        ttl: int,
        on_lost: OnLost | None,
        more: dict[str, Any],
    ) -> None:
        self.client, self.name, self.holder, self.ttl = client, name, holder, ttl
        self._on_lost, self._more = on_lost, more | {"capacity": 1}
        self.lease: Lease | None = None
        """The lease held while leading: ``receipts`` of every answer, the grant."""

    @property
    def term(self) -> int:
        """This candidate's term while it leads: the fencing token of its lease."""
        if self.lease is None:
            raise RuntimeError(f"{self.holder!r} does not lead {self.name!r}: campaign first")
        return self.lease.fencing_token

    @property
    def lost(self) -> bool:
        """True once leadership won here is gone (or past its local expiry unconfirmed)."""
        return self.lease is not None and self.lease.lost

    def campaign(self, timeout: float | None = None) -> Election:
        """Block until this candidate leads (LeaseHeld once ``timeout`` s pass without)."""
        if self.lease is not None:
            raise RuntimeError(f"{self.holder!r} already campaigned for {self.name!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            wait = WAIT_MAX_SECONDS if remaining is None else math.ceil(remaining)
            wait = max(1, min(wait, WAIT_MAX_SECONDS))
            lease = self.client.lease(
                self.name, self.holder, self.ttl, wait, on_lost=self._on_lost, **self._more
            )
            try:
                self.lease = lease.__enter__()
                return self
            except LeaseHeld as held:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise
                time.sleep(pause_after(held, remaining))

    def resign(self) -> None:
        """Give leadership up now (release the lease): the next candidate leads at once."""
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.__exit__(None, None, None)

    def leader(self) -> Leader | None:
        """Who leads now (a signed ``get``), or None."""
        return leader_of(self.client.get(self.name))

    def observe(
        self, after: int | None = None, timeout: float = 30.0, every: float = 0.25
    ) -> Leader | None:
        """Wait for a leader whose term is above ``after`` (None: any leader) and return it;
        None if none came within ``timeout`` s. Reads ``get`` every ``every`` s."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.leader()
            if found is not None and (after is None or found.term > after):
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(every, left))

    def __enter__(self) -> Election:
        return self.campaign()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.__exit__(kind, error, tb)
