"""``client.lease(...)``: a lease held for a ``with`` block, renewed by a thread that asks
the keeper (``keeper.py``) when to renew and when the lease is lost."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from api.client.answers import LeaseAnswer
from api.client.errors import TenureError
from api.client.holding import HeldState
from api.client.keeper import Keeper

if TYPE_CHECKING:
    from api.client.sync import Client


class Lease(HeldState):
    """A lease held for a ``with`` block: ``fencing_token`` to pass to the store you write to,
    ``receipts`` of every answer, ``lost`` once it is gone or past its local expiry (then
    ``on_lost`` is called once, and leaving the block raises LeaseLost, releasing nothing)."""

    client: Client
    _stop: threading.Event
    _thread: threading.Thread

    def _now(self) -> float:
        return time.monotonic()

    def __enter__(self) -> Lease:
        sent = time.monotonic()
        grant = self.client.acquire(
            self.resource, self.holder, self.ttl, wait=self._wait, **self._more
        )
        keeper = self._granted(grant, sent)
        if keeper.delay(time.monotonic()) <= 0:  # the answer came late: confirm it first
            sent = time.monotonic()
            keeper = self._confirmed(self.client.run(self._renewal()), sent)
        self._keeper = keeper
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_forever, args=(keeper,), name=f"renew {self.resource}", daemon=True
        )
        self._thread.start()
        return self

    def _renew_forever(self, keeper: Keeper) -> None:
        while not self._stop.wait(keeper.delay(time.monotonic())):
            sent = time.monotonic()
            try:
                outcome: LeaseAnswer | TenureError = self.client.run(
                    self._renewal(), deadline=keeper.valid_until
                )
            except TenureError as error:
                outcome = error
            if self._renewed(keeper, sent, outcome, time.monotonic()):
                return

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        keeper = self._leaving(time.monotonic())
        with self._releasing(keeper, kind):
            answer = self.client.release(
                self.resource, self.owner_token, fencing_token=self.fencing_token
            )
            self.receipts.append(answer.receipt)
