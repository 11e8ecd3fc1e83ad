"""When a held lease is renewed and when it counts as lost; pure, time is an argument.

Rules (the shells in ``sync.py`` and ``aio.py`` only sleep and send):

- a lease is good until ``valid_until``: the moment its last grant or renewal was *sent*,
  plus the ttl (the server's clock started no earlier), so local expiry is never optimistic;
- it is renewed at a third of the ttl after that moment, leaving two thirds for retries;
- a renewal without a known outcome is retried every ``ttl / 12`` (at least 50 ms) until it
  is confirmed or ``valid_until`` passes — then the lease is lost;
- a ``LOST`` / ``NOT_ACTIVE`` answer loses it at once; after a loss nothing is renewed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from api.client.errors import LeaseLost, TenureError

logger = logging.getLogger("tenure.client")
OnLost = Callable[[LeaseLost], object]


def report_loss(resource: str, lost: LeaseLost, on_lost: OnLost | None) -> None:
    """Log a lost lease and tell the holder's callback (whose own failure is only logged)."""
    logger.warning("lease on %r lost: %s", resource, lost)
    if on_lost is not None:
        try:
            on_lost(lost)
        except Exception:
            logger.exception("on_lost callback failed")


RENEW_AT = 1 / 3
RETRY_EVERY = 1 / 12
WAITED_SLACK = 0.25  # a waited grant happened at most this long before its answer arrived


@dataclass(slots=True)
class Keeper:
    ttl: float
    valid_until: float
    failing: bool = False
    lost: LeaseLost | None = None

    @classmethod
    def granted(cls, ttl: float, sent_at: float, received_at: float, waited: bool) -> Keeper:
        """A fresh grant: a waited one was granted late, just before its answer came back."""
        start = max(sent_at, received_at - WAITED_SLACK) if waited else sent_at
        return cls(ttl, start + ttl)

    def delay(self, now: float) -> float:
        """Seconds until the next renewal attempt."""
        if self.failing:
            return max(0.05, self.ttl * RETRY_EVERY)
        return max(0.0, self.valid_until - self.ttl * (1 - RENEW_AT) - now)

    def renewed(self, sent_at: float) -> None:
        self.valid_until = max(self.valid_until, sent_at + self.ttl)
        self.failing = False

    def failed(self, error: TenureError, now: float) -> LeaseLost | None:
        """Record a renewal that did not succeed; return the loss if this is one."""
        if isinstance(error, LeaseLost):
            self.lost = error
        elif now >= self.valid_until:
            message = f"the lease expired before a renewal was confirmed ({error})"
            self.lost = LeaseLost(message, error.answer)
        else:
            self.failing = True
        return self.lost
