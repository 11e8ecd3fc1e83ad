"""What a held lease knows, whichever shell holds it: the grant, the receipts, the keeper's
verdict, and what each answer means for them. ``held.py`` renews with a thread and ``aio.py``
with a task; both send and read the clock themselves, so nothing here waits or does I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from api.client.answers import LeaseAnswer
from api.client.core import Call, Core
from api.client.errors import LeaseLost, TenureError
from api.client.keeper import Keeper, OnLost, logger, report_loss


class Shell(Protocol):
    """What a held lease needs of its client: the core that builds its calls."""

    core: Core


class HeldState(ABC):
    """A held lease's fields and properties, shared by ``Lease`` and ``AsyncLease`` (each
    narrows ``client`` to its own client class)."""

    def __init__(
        self,
        client: Shell,
        resource: str,
        holder: str,
        ttl: int,
        wait: int | None,
        on_lost: OnLost | None,
        more: dict[str, Any],
    ) -> None:
        self.client, self.resource, self.holder, self.ttl = client, resource, holder, ttl
        self._wait, self._on_lost, self._more = wait, on_lost, more
        self.receipts: list[dict[str, Any]] = []
        self.grant: LeaseAnswer | None = None
        self._keeper: Keeper | None = None

    @property
    def fencing_token(self) -> int:
        """The grant's fencing token: pass it to the store you write to."""
        assert self.grant is not None and self.grant.fencing_token is not None
        return self.grant.fencing_token

    @property
    def owner_token(self) -> str:
        """The grant's owner token, the proof that the lease is yours: keep it secret."""
        assert self.grant is not None and self.grant.owner_token is not None
        return self.grant.owner_token

    @property
    def lost(self) -> bool:
        """True once the lease is gone, or past its local expiry unconfirmed."""
        return self._keeper is not None and self._keeper.expired(self._now())

    @abstractmethod
    def _now(self) -> float:
        """The shell's clock (``time.monotonic``), read in the shell's own module."""

    def _granted(self, grant: LeaseAnswer, sent: float) -> Keeper:
        """Record the grant of a request sent at ``sent``; the keeper it starts."""
        self.grant = grant
        return self._confirmed(grant, sent)

    def _confirmed(self, answer: LeaseAnswer, sent: float) -> Keeper:
        """Record a grant or renewal whose request was sent at ``sent``: the lease is good
        for a ttl from then, however late the answer came."""
        self.receipts.append(answer.receipt)
        return Keeper.granted(self.ttl, sent)

    def _renewal(self) -> Call[LeaseAnswer]:
        """The call renewing this lease by its ttl, fenced by its token."""
        fields = dict(resource=self.resource, owner_token=self.owner_token, ttl=self.ttl)
        return self.client.core.lease("renew", **fields, fencing_token=self.fencing_token)

    def _renewed(
        self, keeper: Keeper, sent: float, outcome: LeaseAnswer | TenureError, now: float
    ) -> bool:
        """Record a renewal sent at ``sent`` that answered ``outcome`` (or raised it) by
        ``now``; True once the lease is lost (then reported): stop renewing."""
        if isinstance(outcome, TenureError):
            lost = keeper.failed(outcome, now)
        else:
            self.receipts.append(outcome.receipt)
            lost = keeper.renewed(sent, now)
        if lost is not None:
            self._report(lost)
        return lost is not None

    def _report(self, lost: LeaseLost) -> None:
        report_loss(self.resource, lost, self._on_lost)

    def _leaving(self, now: float) -> Keeper:
        """The keeper of a lease its holder leaves at ``now``; raises the loss instead (reported
        here when the renewal loop has not declared it yet) when the lease is gone."""
        keeper = self._keeper
        assert keeper is not None
        declared = keeper.lost
        gone = keeper.leave(now)
        if gone is not None:
            if declared is None:
                self._report(gone)
            raise gone
        return keeper

    @contextmanager
    def _releasing(self, keeper: Keeper, kind: type[BaseException] | None) -> Iterator[None]:
        """Around the release on leaving: LeaseLost is recorded, reported and raised; another
        failure is raised only if the block (``kind``: its exception type) succeeded, else
        logged, and the lease ends by its ttl."""
        try:
            yield
        except LeaseLost as lost:
            keeper.lost = lost
            self._report(lost)
            raise
        except TenureError:
            if kind is None:
                raise
            logger.warning("release of %r failed; it expires in %s s", self.resource, self.ttl)
