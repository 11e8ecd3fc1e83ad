"""The blocking client: thin over the sans-IO core, a thread renews held leases."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from api.client import watching
from api.client.answers import Answer, LeaseAnswer, NamespaceAnswer, ScopeAnswer
from api.client.core import A, Call, RetryPolicy, Sleep
from api.client.election import Election
from api.client.held import Lease
from api.client.keeper import OnLost
from api.client.listing import LeaseList, list_call, pages
from api.client.tls import CertFiles
from api.client.trust import Trust, trusted_dids
from api.client.watching import WatchEvent, WatchGap
from api.client.wiring import core_for, http_options, no_answer, reply_of
from verify.defaults import DEFAULT_TTL_SECONDS


class Client:
    """A tenure client: every answer's receipt is verified before it is returned, against
    ``trust`` (a did:key, or the keyring of ``GET /api/v1/keys``) or, without it, the keyring
    this server serves (``verify=False``: no check at all); ``cacert`` trusts a private CA's
    server certificate, ``cert`` (cert file, key file) is shown to a mutual-TLS server;
    ``witnesses`` (cosigner vkeys): ``witness_threshold`` of them (default: all) must have
    cosigned a checkpoint the client reads; ``transport`` is for tests."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        namespace: str | None = None,
        trust: Trust | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        verify: bool = True,
        cacert: str | Path | None = None,
        cert: CertFiles | None = None,
        witnesses: Sequence[str] = (),
        witness_threshold: int | None = None,
    ) -> None:
        self.core = core_for(trust, timeout, retry, verify, witnesses, witness_threshold)
        options = http_options(url, api_key, namespace, cacert, cert)
        self._http = httpx.Client(transport=transport, **options)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def run(self, call: Call[A], deadline: float | None = None) -> A:
        """Send one call through the core's retry flow; ``deadline`` is on time.monotonic."""
        flow = self.core.flow(call, time.monotonic, random.random, deadline)
        try:
            step = next(flow)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                try:
                    response = self._http.request(
                        step.method, step.path, content=step.body, timeout=step.timeout
                    )
                except httpx.TransportError as error:
                    step = flow.throw(no_answer(error))
                    continue
                step = flow.send(reply_of(response))
        except StopIteration as stop:
            answer: A = stop.value
            return answer

    def acquire(
        self,
        resource: str,
        holder: str | None,
        ttl: int = DEFAULT_TTL_SECONDS,
        *,
        wait: int | None = None,
        **more: Any,
    ) -> LeaseAnswer:
        """Take a lease (waiting up to ``wait`` s if held); ``holder`` None: the server makes
        a label. ``more``: capacity, fingerprint, scope, owner_token, fencing_token, request_id,
        tenant_id. Raises LeaseHeld, Conflict."""
        return self.run(
            self.core.lease("acquire", resource=resource, holder=holder, ttl=ttl, wait=wait, **more)
        )

    def wait(
        self,
        resource: str,
        holder: str | None,
        wait: int = 30,
        ttl: int = DEFAULT_TTL_SECONDS,
        **more: Any,
    ) -> LeaseAnswer:
        """Queue for a lease, first come first served; LeaseHeld when ``wait`` s are up."""
        return self.run(
            self.core.lease("wait", resource=resource, holder=holder, ttl=ttl, wait=wait, **more)
        )

    def renew(
        self, resource: str, owner_token: str, ttl: int | None = None, **more: Any
    ) -> LeaseAnswer:
        """Extend a lease you hold by ``ttl`` s from now. Raises LeaseLost."""
        return self.run(
            self.core.lease("renew", resource=resource, owner_token=owner_token, ttl=ttl, **more)
        )

    def release(self, resource: str, owner_token: str, **more: Any) -> LeaseAnswer:
        """Give a lease back. Raises LeaseLost (not live any more, or fencing mismatch)."""
        return self.run(
            self.core.lease("release", resource=resource, owner_token=owner_token, **more)
        )

    def complete(self, resource: str, owner_token: str, result: Any, **more: Any) -> LeaseAnswer:
        """End a lease with a JSON ``result`` later acquirers with its fingerprint receive."""
        return self.run(
            self.core.lease(
                "complete", resource=resource, owner_token=owner_token, result=result, **more
            )
        )

    def get(self, resource: str) -> LeaseAnswer:
        """Who holds ``resource`` (``FREE`` or ``HOLDING``)."""
        return self.run(self.core.lease("get", resource=resource))

    def scope(self, scope: str) -> ScopeAnswer:
        """The resume packet: your live leases in ``scope``."""
        return self.run(self.core.scope(scope))

    def release_scope(self, scope: str) -> ScopeAnswer:
        """Release every lease you hold in ``scope``."""
        return self.run(self.core.scope(scope, "release"))

    def heartbeat(
        self, scope: str, dead_seconds: int, renew: bool = False, ttl: int | None = None
    ) -> ScopeAnswer:
        """Arm (0 disarms) the scope's dead-man switch and heartbeat it; ``renew`` also
        renews every live lease of the scope by ``ttl`` s (``renewed`` in the answer)."""
        fields = dict(dead_seconds=dead_seconds, renew=renew or None, ttl=ttl)
        return self.run(self.core.scope(scope, "heartbeat", **fields))

    def list_leases(self, prefix: str | None = None, **query: Any) -> LeaseList:
        """One page of your live leases (``GET /api/v1/leases``); ``query``: ``scope``,
        ``holder``, ``limit``, ``cursor`` (an earlier page's ``next``)."""
        return self.run(list_call(self.core, prefix, **query))

    def lease_pages(self, prefix: str | None = None, **query: Any) -> Iterator[LeaseList]:
        """Every page of :meth:`list_leases`, following ``next``: each a receipt of its own."""
        return pages(lambda cursor: self.list_leases(prefix, **query, cursor=cursor))

    def create_namespace(self) -> NamespaceAnswer:
        """Mint a namespace (``ns_…``): a secret naming a fresh tenant of your own."""
        return self.run(self.core.namespace())

    def verify_provenance(self, document: Any) -> Answer:
        """Ask the server to verify a saved receipt, credential or bundle."""
        return self.run(self.core.verify_provenance(document))

    def keys(self) -> dict[str, Any]:
        """``GET /api/v1/keys``: every signing key, to pin as ``trust``."""
        return self.run(self.core.raw("/api/v1/keys")).data

    def checkpoint(self) -> dict[str, Any]:
        """The latest signed checkpoint (its note verified when ``trust`` is set)."""
        return self.run(self.core.raw("/api/v1/log/checkpoint")).data

    def watch(
        self, from_index: int | None = None, *, reconnects: int = 5, **filters: str
    ) -> Iterator[WatchEvent | WatchGap]:
        """Your tenant's lease events from log index ``from_index`` (None: from now on),
        resumed after a dropped connection; ``filters``: prefix, scope, holder."""
        if self.core.served and self.core.trusted is None:
            self.core.trusted = trusted_dids(self.keys())  # as the first signed call pins it
        query = {**filters, **({} if from_index is None else {"from": from_index})}
        return watching.watch(self._http, self.core, query, reconnects)

    def lease(
        self,
        resource: str,
        holder: str,
        ttl: int = DEFAULT_TTL_SECONDS,
        wait: int | None = None,
        *,
        on_lost: OnLost | None = None,
        **more: Any,
    ) -> Lease:
        """``with client.lease(...) as lease:`` holds it for the block, renewing it in the
        background, and releases it on exit; see :class:`Lease`."""
        return Lease(self, resource, holder, ttl, wait, on_lost, more)

    def elect(
        self,
        name: str,
        holder: str,
        ttl: int = DEFAULT_TTL_SECONDS,
        *,
        on_lost: OnLost | None = None,
        **more: Any,
    ) -> Election:
        """Leader election on the lease ``name``: ``with client.elect(...) as leader:``
        campaigns, leads with ``leader.term`` (its fencing token), resigns on exit; see
        :class:`~api.client.election.Election`."""
        return Election(self, name, holder, ttl, on_lost, more)
