"""The lease routes of DESIGN §3.2 and the namespace route of §3.1: thin over the service."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable

from fastapi import FastAPI, Request
from fastapi.responses import Response

from api.accel.hot_route import LEASE_PATH, Handler
from api.metrics import lease_answered
from api.names import RULE, high_entropy
from api.requests import (
    EdgeState,
    caller_tenant,
    edge_of,
    header,
    limit_client,
    parse,
    parse_body,
    read_body,
)
from api.responses import respond, suite_of
from api.schemas import OPS, InputError, LeaseBody, NamespaceBody
from api.settings import Settings
from api.tenancy import ANONYMOUS, mint_namespace
from ledger.lease.calls import Answer, KeyRevoked, LeaseCall, Limits, StorageUnavailable
from ledger.lease.leases import Outcome
from ledger.lease.ops import CallRefused, Op, check_call, may_wait

DISCONNECT_POLL_SECONDS = 0.25
CONFLICTS = frozenset(
    {Outcome.HELD, Outcome.LOST, Outcome.CONFLICT, Outcome.IDEMPOTENCY_CONFLICT}
    | {Outcome.NOT_ACTIVE}
)


def status_of(answer: Answer) -> int:
    if answer.fresh_grant:
        return 201
    return 409 if answer.outcome in CONFLICTS else 200


def _call(body: LeaseBody, op: str, tenant: str, limits: Limits) -> LeaseCall:
    """Build the call and check the per-op rules (ledger/lease/ops.py) and the anonymous
    tenant's."""
    call = LeaseCall(
        op=op,
        tenant=tenant,
        resource=body.resource,
        holder=body.holder,
        ttl_seconds=30 if body.ttl_seconds is None else body.ttl_seconds,
        owner_token=body.owner_token,
        fencing_token=body.fencing_token,
        capacity=body.capacity,
        wait_seconds=body.wait_seconds,
        request_id=body.request_id,
        fingerprint=body.fingerprint,
        scope=body.scope,
        result=body.result,
    )
    try:
        check_call(call, limits, "result" in body.model_fields_set)
    except CallRefused as error:
        status = 413 if error.code == "too_large" else 422
        raise InputError(error.code, str(error), error.field, status) from error
    if tenant == ANONYMOUS and not high_entropy(body.resource):
        message = f"in the anonymous tenant a resource {RULE}"
        raise InputError("low_entropy", message, "resource")
    if tenant == ANONYMOUS and body.scope is not None and not high_entropy(body.scope):
        raise InputError("low_entropy", f"in the anonymous tenant a scope {RULE}", "scope")
    return call


async def _lease(request: Request, settings: Settings, path_op: str | None) -> Response:
    limit = settings.complete_body_max_bytes
    if path_op is not None and path_op != Op.COMPLETE:
        limit = settings.body_max_bytes
    suite = suite_of(request)  # refuse a bad Accept-Provenance before doing anything
    raw_body = await read_body(request, limit)
    runtime = edge_of(request)
    service = runtime.service
    body, document = parse_body(
        LeaseBody, raw_body, {"ttlSeconds": (1, service.limits.ttl_max_seconds)}
    )
    op = path_op or body.op
    if op is None:
        raise InputError("missing", "op is required in the body or the path", "op")
    if body.op is not None and body.op != op:
        raise InputError("invalid_value", f"op {body.op!r} contradicts the path", "op")
    if op != Op.COMPLETE and len(raw_body) > settings.body_max_bytes:
        raise InputError("too_large", f"body exceeds {settings.body_max_bytes} bytes", status=413)
    tenant = await _caller(request, body, op, runtime)
    call = _call(body, op, tenant, service.limits)
    durable = None
    if may_wait(call):
        call.key_digest = runtime.tenancy.key_digest(header(request, "authorization"))
        answer = await _waited(request, service.lease(call))
    else:  # signed while its batch's commit is made durable, sent only once it is (0014)
        answer, durable = await service.lease_early(call)
    try:
        token = answer.owner_token
        if token is not None and answer.data.get("replayed"):
            token = _replay_owner_token(call, answer, token)
        headers = None
        if answer.outcome is Outcome.HELD:
            headers = {"Retry-After": str(answer.data["retryAfterSeconds"])}
        cited = (answer.entry, answer.pseudonyms)
        status = status_of(answer)
        response = respond(
            request, answer.data, status, headers, cited, raw_body, suite, document, token
        )
    finally:
        await service.durable(durable)  # a failed commit: 503 unknown, and nothing was sent
    lease_answered(op, answer.outcome.value)
    return response


async def _caller(request: Request, body: LeaseBody, op: str, runtime: EdgeState) -> str:
    """The caller's tenant, rate-limited: renew and release draw on an allowance of their own,
    so a throttled tenant can clean up; so does the retry of a remembered request (rule 12),
    which applies nothing: charged to that allowance first, then sent only if it replays."""
    cleanup = op in (Op.RENEW, Op.RELEASE)
    try:
        return caller_tenant(request, body.namespace, body.tenant_id, cleanup, runtime)
    except InputError as error:
        if error.status != 429 or cleanup or body.request_id is None:
            raise
        tenant = caller_tenant(request, body.namespace, body.tenant_id, True, runtime)
        if not await runtime.service.replays(_call(body, op, tenant, runtime.service.limits)):
            raise
        return tenant


def _replay_owner_token(call: LeaseCall, answer: Answer, token: str) -> str | None:
    """docs/decisions/0007: a replayed grant whose lease is still live gets its (derived)
    ownerToken back only if the requestId carries 128 random bits, as a name must in the
    anonymous tenant; otherwise the answer says why it has none."""
    if high_entropy(call.request_id or ""):
        return token
    answer.data["ownerTokenWithheld"] = f"a requestId that returns an ownerToken {RULE}"
    return None


async def _waited(request: Request, waiting: Awaitable[Answer]) -> Answer:
    """A blocking wait's answer; 401 if the caller's API key was revoked while it waited."""
    try:
        return await _unless_disconnected(request, waiting)
    except KeyRevoked as error:
        message = "the API key was revoked while the call waited; nothing was granted"
        raise InputError("unauthorized", message, status=401) from error


async def _unless_disconnected(request: Request, waiting: Awaitable[Answer]) -> Answer:
    """Run a blocking wait, but give up (leaving the queue) if the caller hangs up: uvicorn
    does not cancel a handler whose client is gone, and a slot granted to nobody would stay
    blocked until its TTL ran out."""
    task = asyncio.ensure_future(waiting)
    while True:
        try:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
        except asyncio.CancelledError:  # the server is stopping (uvicorn's grace period is up)
            return await _stopped(task)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise ClientGone


async def _stopped(task: asyncio.Future[Answer]) -> Answer:
    """The wait's answer if it came in time; else it leaves the queue and the caller gets the
    JSON 503 ``status: unknown`` (never a success), not the server's plain-text 500."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if task.cancelled():
        raise StorageUnavailable("the wait ended as the server stopped")
    return task.result()


class ClientGone(Exception):
    """The caller disconnected while waiting; nobody is left to answer."""


async def lease_answer(request: Request, settings: Settings, path_op: str | None) -> Response:
    """The answer of ``POST /api/v1/lease`` (``path_op`` None) or ``/api/v1/lease/{path_op}``."""
    if path_op is not None and path_op not in OPS:
        raise InputError("invalid_value", f"op must be one of {', '.join(OPS)}", "op")
    return await _lease(request, settings, path_op)


def lease_routes(app: FastAPI, settings: Settings) -> Handler:
    """The lease and namespace routes, and the handler of the two lease routes for the
    ``api.accel.hot_route.HotRoute`` middleware; their FastAPI routes
    document them in the OpenAPI and answer only what it passes on (a non-empty ``root_path``)."""

    async def answer(request: Request, op: str | None) -> Response:
        return await lease_answer(request, settings, op)

    @app.post(LEASE_PATH)
    async def lease(request: Request) -> Response:
        """Run a lease operation named by the body's `op`."""
        return await lease_answer(request, settings, None)

    @app.post(LEASE_PATH + "/{op}")
    async def lease_op(request: Request, op: str) -> Response:
        """Run the lease operation named in the path."""
        return await lease_answer(request, settings, op)

    @app.post("/api/v1/namespaces", status_code=201)
    async def namespaces(request: Request) -> Response:
        """Mint a namespace: a 256-bit secret whose hash names a fresh tenant."""
        suite_of(request)
        limit_client(request)
        parse(NamespaceBody, await read_body(request, settings.body_max_bytes))
        data = {"status": "pass", "namespace": mint_namespace(), "entropyBits": 256}
        return respond(request, data, 201)

    return answer
