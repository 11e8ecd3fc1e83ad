"""Blocking waits (rule 9) of the lease service: a queued call waits for the grant that a
commit of this or another process gives it, or for its time to run out. The waiter is
registered and queued by :meth:`LeaseService.lease`; deciding stays in ``ledger/lease/waits.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from ledger.lease import waits
from ledger.lease.calls import Answer, KeyRevoked, Limits, StorageUnavailable, Waiter
from ledger.lease.decider import Decider
from ledger.writer.committer import GroupCommitter
from ledger.writer.units import unattended


class LeaseService(Protocol):
    """What a wait needs of :class:`~ledger.writer.service.LeaseService`."""

    @property
    def limits(self) -> Limits: ...

    @property
    def clock(self) -> Callable[[], int]: ...

    @property
    def committer(self) -> GroupCommitter: ...

    @property
    def decider(self) -> Decider: ...

    async def durable(self, future: asyncio.Future[Any] | None) -> Any: ...


async def until_granted(service: LeaseService, waiter: Waiter) -> Answer:
    """Wait for a queued call's grant, up to its waitSeconds (capped); then its final answer
    (HELD, or the grant that came just in time). A caller that goes away leaves the queue."""
    seconds = min(waiter.call.wait_seconds or 30, service.limits.wait_max_seconds)
    decider = service.decider
    try:
        return await asyncio.wait_for(asyncio.shield(waiter.future), seconds)
    except asyncio.CancelledError:
        if waiter.future.cancelled() and not _cancelling():
            # The service stopped, not the caller: 503 unknown.
            raise StorageUnavailable("the wait ended as the service stopped") from None
        waiter.future.cancel()  # the caller is gone: grant it no slot later
        service.committer.submit(lambda _: waits.leave(decider.batch, waiter)).add_done_callback(
            unattended
        )
        raise
    except TimeoutError:
        final = service.committer.submit(
            lambda _: waits.collect(decider.batch, waiter, service.clock(), True)
        )
        answer: Answer | None = await service.durable(final)
        if answer is None:  # collect refused it: its key was revoked
            raise waiter.refused or KeyRevoked() from None
        return answer


def collect_woken(service: LeaseService, decider: Decider, waiter_id: str) -> None:
    """Another process granted this process's waiter: collect the answer from its row and
    settle the waiter's future (a failed collect is left to the deadline's re-check)."""
    waiter = decider.local.get(waiter_id)
    if waiter is None or waiter.future.done():
        return
    work = service.committer.submit(
        lambda _: waits.collect(decider.batch, waiter, service.clock(), False)
    )

    def deliver(done: asyncio.Future[Answer | None]) -> None:
        if done.cancelled() or done.exception() is not None or waiter.future.done():
            return  # the deadline's re-check still collects it
        answer = done.result()
        if waiter.refused is not None:
            waiter.future.set_exception(waiter.refused)
        elif answer is not None:
            waiter.future.set_result(answer)

    work.add_done_callback(deliver)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
