"""``client.lease(...)``: a lease held for a ``with`` block, renewed by a thread that asks
the keeper (``keeper.py``) when to renew and when the lease is lost."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from api.client.answers import LeaseAnswer
from api.client.errors import LeaseLost, TenureError
from api.client.keeper import Keeper, OnLost, logger, report_loss

if TYPE_CHECKING:
    from api.client.sync import Client


class Lease:
    """A lease held for a ``with`` block: ``fencing_token`` to pass to the store you write to,
    ``receipts`` of every answer, ``lost`` once it is gone or past its local expiry (then
    ``on_lost`` is called once, and leaving the block raises LeaseLost, releasing nothing)."""

    def __init__(
        self,
        client: Client,
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
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def fencing_token(self) -> int:
        assert self.grant is not None and self.grant.fencing_token is not None
        return self.grant.fencing_token

    @property
    def owner_token(self) -> str:
        assert self.grant is not None and self.grant.owner_token is not None
        return self.grant.owner_token

    @property
    def lost(self) -> bool:
        """True once the lease is gone, or past its local expiry unconfirmed."""
        return self._keeper is not None and self._keeper.expired(time.monotonic())

    def __enter__(self) -> Lease:
        sent = time.monotonic()
        grant = self.client.acquire(
            self.resource, self.holder, self.ttl, wait=self._wait, **self._more
        )
        self.grant = grant
        self.receipts.append(grant.receipt)
        keeper = Keeper.granted(self.ttl, sent)
        if keeper.delay(time.monotonic()) <= 0:  # the answer came late: confirm it first
            sent = time.monotonic()
            self.receipts.append(self._renew(None).receipt)
            keeper = Keeper.granted(self.ttl, sent)
        self._keeper = keeper
        self._thread = threading.Thread(
            target=self._renew_forever, name=f"renew {self.resource}", daemon=True
        )
        self._thread.start()
        return self

    def _renew(self, deadline: float | None) -> LeaseAnswer:
        fields = dict(resource=self.resource, owner_token=self.owner_token, ttl=self.ttl)
        call = self.client.core.lease("renew", **fields, fencing_token=self.fencing_token)
        return self.client.run(call, deadline=deadline)

    def _renew_forever(self) -> None:
        keeper = self._keeper
        assert keeper is not None
        while not self._stop.wait(keeper.delay(time.monotonic())):
            sent = time.monotonic()
            try:
                answer = self._renew(keeper.valid_until)
            except TenureError as error:
                lost = keeper.failed(error, time.monotonic())
            else:
                self.receipts.append(answer.receipt)
                lost = keeper.renewed(sent, time.monotonic())
            if lost is not None:
                self._report(lost)
                return

    def _report(self, lost: LeaseLost) -> None:
        report_loss(self.resource, lost, self._on_lost)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        keeper = self._keeper
        assert keeper is not None
        declared = keeper.lost
        gone = keeper.leave(time.monotonic())
        if gone is not None:
            if declared is None:
                self._report(gone)
            raise gone
        try:
            answer = self.client.release(
                self.resource, self.owner_token, fencing_token=self.fencing_token
            )
        except LeaseLost as lost:
            keeper.lost = lost
            self._report(lost)
            raise
        except TenureError:
            if kind is None:
                raise
            logger.warning("release of %r failed; it expires in %s s", self.resource, self.ttl)
            return
        self.receipts.append(answer.receipt)
