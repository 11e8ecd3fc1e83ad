"""The asyncio client: the same surface as ``Client``, over the same sans-IO core; a task
renews held leases."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from api.client.answers import Answer, LeaseAnswer, NamespaceAnswer, ScopeAnswer
from api.client.core import A, Call, RetryPolicy, Sleep
from api.client.errors import TenureError
from api.client.holding import HeldState
from api.client.keeper import Keeper, OnLost
from api.client.listing import LeaseList, async_pages, list_call
from api.client.tls import CertFiles
from api.client.trust import Trust
from api.client.wiring import core_for, http_options, no_answer, reply_of
from verify.defaults import DEFAULT_TTL_SECONDS


class AsyncClient:
    """``Client`` for asyncio: every call is awaited; ``async with client.lease(...)``."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        namespace: str | None = None,
        trust: Trust | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: bool = True,
        cacert: str | Path | None = None,
        cert: CertFiles | None = None,
        witnesses: Sequence[str] = (),
        witness_threshold: int | None = None,
    ) -> None:
        self.core = core_for(trust, timeout, retry, verify, witnesses, witness_threshold)
        options = http_options(url, api_key, namespace, cacert, cert)
        self._http = httpx.AsyncClient(transport=transport, **options)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def run(self, call: Call[A], deadline: float | None = None) -> A:
        """Send one call through the core's retry flow; ``deadline`` is on time.monotonic."""
        flow = self.core.flow(call, time.monotonic, random.random, deadline)
        try:
            step = next(flow)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                try:
                    response = await self._http.request(
                        step.method, step.path, content=step.body, timeout=step.timeout
                    )
                except httpx.TransportError as error:
                    step = flow.throw(no_answer(error))
                    continue
                step = flow.send(reply_of(response))
        except StopIteration as stop:
            answer: A = stop.value
            return answer

    async def acquire(
        self,
        resource: str,
        holder: str | None,
        ttl: int = DEFAULT_TTL_SECONDS,
        *,
        wait: int | None = None,
        **more: Any,
    ) -> LeaseAnswer:
        """See ``Client.acquire``."""
        fields = dict(resource=resource, holder=holder, ttl=ttl, wait=wait)
        return await self.run(self.core.lease("acquire", **fields, **more))

    async def wait(
        self,
        resource: str,
        holder: str | None,
        wait: int = 30,
        ttl: int = DEFAULT_TTL_SECONDS,
        **more: Any,
    ) -> LeaseAnswer:
        """See ``Client.wait``."""
        fields = dict(resource=resource, holder=holder, ttl=ttl, wait=wait)
        return await self.run(self.core.lease("wait", **fields, **more))

    async def renew(
        self, resource: str, owner_token: str, ttl: int | None = None, **more: Any
    ) -> LeaseAnswer:
        """See ``Client.renew``."""
        fields = dict(resource=resource, owner_token=owner_token, ttl=ttl)
        return await self.run(self.core.lease("renew", **fields, **more))

    async def release(self, resource: str, owner_token: str, **more: Any) -> LeaseAnswer:
        """See ``Client.release``."""
        fields = dict(resource=resource, owner_token=owner_token)
        return await self.run(self.core.lease("release", **fields, **more))

    async def complete(
        self, resource: str, owner_token: str, result: Any, **more: Any
    ) -> LeaseAnswer:
        """See ``Client.complete``."""
        fields = dict(resource=resource, owner_token=owner_token, result=result)
        return await self.run(self.core.lease("complete", **fields, **more))

    async def get(self, resource: str) -> LeaseAnswer:
        """See ``Client.get``."""
        return await self.run(self.core.lease("get", resource=resource))

    async def scope(self, scope: str) -> ScopeAnswer:
        """See ``Client.scope``."""
        return await self.run(self.core.scope(scope))

    async def release_scope(self, scope: str) -> ScopeAnswer:
        """See ``Client.release_scope``."""
        return await self.run(self.core.scope(scope, "release"))

    async def heartbeat(
        self, scope: str, dead_seconds: int, renew: bool = False, ttl: int | None = None
    ) -> ScopeAnswer:
        """See ``Client.heartbeat``."""
        fields = dict(dead_seconds=dead_seconds, renew=renew or None, ttl=ttl)
        return await self.run(self.core.scope(scope, "heartbeat", **fields))

    async def list_leases(self, prefix: str | None = None, **query: Any) -> LeaseList:
        """See ``Client.list_leases``."""
        return await self.run(list_call(self.core, prefix, **query))

    def lease_pages(self, prefix: str | None = None, **query: Any) -> AsyncIterator[LeaseList]:
        """See ``Client.lease_pages``: ``async for page in client.lease_pages(...)``."""
        return async_pages(lambda cursor: self.list_leases(prefix, **query, cursor=cursor))

    async def create_namespace(self) -> NamespaceAnswer:
        """See ``Client.create_namespace``."""
        return await self.run(self.core.namespace())

    async def verify_provenance(self, document: Any) -> Answer:
        """See ``Client.verify_provenance``."""
        return await self.run(self.core.verify_provenance(document))

    async def keys(self) -> dict[str, Any]:
        """See ``Client.keys``."""
        return (await self.run(self.core.raw("/api/v1/keys"))).data

    async def checkpoint(self) -> dict[str, Any]:
        """See ``Client.checkpoint``."""
        return (await self.run(self.core.raw("/api/v1/log/checkpoint"))).data

    def lease(
        self,
        resource: str,
        holder: str,
        ttl: int = DEFAULT_TTL_SECONDS,
        wait: int | None = None,
        *,
        on_lost: OnLost | None = None,
        **more: Any,
    ) -> AsyncLease:
        """``async with client.lease(...) as lease:``; see ``Client.lease``."""
        return AsyncLease(self, resource, holder, ttl, wait, on_lost, more)


class AsyncLease(HeldState):
    """``Lease`` for asyncio: a task renews it; ``on_lost`` is called on the event loop."""

    client: AsyncClient
    _stop: asyncio.Event
    _task: asyncio.Task[None]

    def _now(self) -> float:
        return time.monotonic()

    async def __aenter__(self) -> AsyncLease:
        sent = time.monotonic()
        grant = await self.client.acquire(
            self.resource, self.holder, self.ttl, wait=self._wait, **self._more
        )
        keeper = self._granted(grant, sent)
        if keeper.delay(time.monotonic()) <= 0:  # the answer came late: confirm it first
            sent = time.monotonic()
            keeper = self._confirmed(await self.client.run(self._renewal()), sent)
        self._keeper = keeper
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._renew_forever(keeper))
        return self

    async def _renew_forever(self, keeper: Keeper) -> None:
        while not await _stopped(self._stop, keeper.delay(time.monotonic())):
            sent = time.monotonic()
            try:
                outcome: LeaseAnswer | TenureError = await self.client.run(
                    self._renewal(), deadline=keeper.valid_until
                )
            except TenureError as error:
                outcome = error
            if self._renewed(keeper, sent, outcome, time.monotonic()):
                return

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        await self._task
        keeper = self._leaving(time.monotonic())
        with self._releasing(keeper, kind):
            answer = await self.client.release(
                self.resource, self.owner_token, fencing_token=self.fencing_token
            )
            self.receipts.append(answer.receipt)


async def _stopped(stop: asyncio.Event, delay: float) -> bool:
    """Wait ``delay`` seconds unless ``stop`` is set first; True if it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), delay)
    return stop.is_set()
