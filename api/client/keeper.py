"""When a held lease is renewed and when it counts as lost; pure, time is an argument.

Rules (the shells in ``held.py`` and ``aio.py`` only sleep and send):

- a lease is good until ``valid_until``: the moment its last grant or renewal was *sent*,
  plus the ttl (the server's clock started no earlier), so local expiry is never optimistic —
  also when the answer came late (a wait, a slow network);
- it is renewed at a third of the ttl after that moment, leaving two thirds for retries; a
  grant that arrives with its renewal already due is renewed before it is handed out;
- a renewal without a known outcome is retried every ``ttl / 12`` (at least 50 ms) until it
  is confirmed or ``valid_until`` passes — then the lease is lost, and a confirmation that
  arrives later does not bring it back;
- a ``LOST`` / ``NOT_ACTIVE`` answer loses it at once; after a loss nothing is renewed, and
  leaving the block raises it (a lease past local expiry is lost, never released).
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


@dataclass(slots=True)
class Keeper:
    ttl: float
    valid_until: float
    failing: bool = False
    lost: LeaseLost | None = None

    @classmethod
    def granted(cls, ttl: float, sent_at: float) -> Keeper:
        """A grant whose request was sent at ``sent_at``: however late its answer came, the
        server granted it no earlier than that."""
        return cls(ttl, sent_at + ttl)

    def delay(self, now: float) -> float:
        """Seconds until the next renewal attempt (0: due now)."""
        if self.failing:
            return max(0.05, min(self.ttl * RETRY_EVERY, self.valid_until - now))
        return max(0.0, self.valid_until - self.ttl * (1 - RENEW_AT) - now)

    def expired(self, now: float) -> bool:
        """Lost, or past its local expiry without a confirmed renewal."""
        return self.lost is not None or now >= self.valid_until

    def leave(self, now: float) -> LeaseLost | None:
        """The loss to raise when the holder leaves at ``now``, recording a local expiry the
        renewal loop has not declared yet; None: still held, so it is released."""
        if self.lost is None and now >= self.valid_until:
            self.lost = LeaseLost("the lease expired before its renewal was confirmed")
        return self.lost

    def renewed(self, sent_at: float, now: float) -> LeaseLost | None:
        """Record a renewal sent at ``sent_at`` and confirmed at ``now``; return the loss if
        the lease had already expired here before the confirmation came."""
        if self.expired(now):
            self.lost = self.lost or LeaseLost("the lease expired before its renewal was confirmed")
            return self.lost
        self.valid_until = max(self.valid_until, sent_at + self.ttl)
        self.failing = False
        return None

    def failed(self, error: TenureError, now: float) -> LeaseLost | None:
        """Record a renewal that did not succeed; return the loss if this is one."""
        if self.lost is not None:
            return self.lost
        if isinstance(error, LeaseLost):
            self.lost = error
        elif now >= self.valid_until:
            message = f"the lease expired before a renewal was confirmed ({error})"
            self.lost = LeaseLost(message, error.answer)
        else:
            self.failing = True
        return self.lost
