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
from api.client.core import A, Call, Core, NetworkError, Reply, RetryPolicy, Sleep, headers
from api.client.errors import LeaseLost, TenureError
from api.client.keeper import Keeper, OnLost, logger, report_loss
from api.client.listing import LeaseList, async_pages, list_call
from api.client.tls import CertFiles, tls_verify
from api.client.trust import Trust, witness_policy
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
        self.core = Core(trust, timeout, retry or RetryPolicy(), verify)
        self.core.witnesses = witness_policy(witnesses, witness_threshold)
        sent = headers(api_key, namespace)
        tls = tls_verify(cacert, cert)
        self._http = httpx.AsyncClient(base_url=url, headers=sent, transport=transport, verify=tls)

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
                    step = flow.throw(NetworkError(f"{type(error).__name__}: {error}"))
                    continue
                step = flow.send(Reply(response.status_code, response.headers, response.content))
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


class AsyncLease:
    """``Lease`` for asyncio: a task renews it; ``on_lost`` is called on the event loop."""

    def __init__(
        self,
        client: AsyncClient,
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
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

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

    async def __aenter__(self) -> AsyncLease:
        sent = time.monotonic()
        grant = await self.client.acquire(
            self.resource, self.holder, self.ttl, wait=self._wait, **self._more
        )
        self.grant = grant
        self.receipts.append(grant.receipt)
        keeper = Keeper.granted(self.ttl, sent)
        if keeper.delay(time.monotonic()) <= 0:  # the answer came late: confirm it first
            sent = time.monotonic()
            self.receipts.append((await self._renew(None)).receipt)
            keeper = Keeper.granted(self.ttl, sent)
        self._keeper = keeper
        self._task = asyncio.create_task(self._renew_forever(keeper))
        return self

    async def _renew(self, deadline: float | None) -> LeaseAnswer:
        fields = dict(resource=self.resource, owner_token=self.owner_token, ttl=self.ttl)
        call = self.client.core.lease("renew", **fields, fencing_token=self.fencing_token)
        return await self.client.run(call, deadline=deadline)

    async def _renew_forever(self, keeper: Keeper) -> None:
        while not await _stopped(self._stop, keeper.delay(time.monotonic())):
            sent = time.monotonic()
            try:
                answer = await self._renew(keeper.valid_until)
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

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
        keeper = self._keeper
        assert keeper is not None
        declared = keeper.lost
        gone = keeper.leave(time.monotonic())
        if gone is not None:
            if declared is None:
                self._report(gone)
            raise gone
        try:
            answer = await self.client.release(
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


async def _stopped(stop: asyncio.Event, delay: float) -> bool:
    """Wait ``delay`` seconds unless ``stop`` is set first; True if it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), delay)
    return stop.is_set()
