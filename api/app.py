"""The HTTP edge: `create_app(settings)`, thin routes over the lease service (DESIGN §3)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from math import ceil
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import logs as access_log
from api.bundle_routes import bundle_routes
from api.log_routes import checkpoint_forever, log_routes
from api.responses import JSON, error_response, raw, respond, suite_of, unknown_response
from api.schemas import (
    OPS,
    InputError,
    LeaseBody,
    NamespaceBody,
    ScopeBody,
    input_error,
)
from api.settings import Settings
from api.tenancy import ANONYMOUS, RateLimiter, Tenancy, high_entropy, mint_namespace
from ledger.calls import Answer, LeaseCall, Limits, StorageUnavailable, now_ms
from ledger.keyring import load_or_create_secret, record_keys, signing_keys
from ledger.leases import Outcome
from ledger.log import LogReader
from ledger.provenance import Issuer
from ledger.service import LeaseService
from ledger.signer import Signer
from ledger.store import DB_NAME, connect, default_origin, open_db
from verify.bundle import verify_document
from verify.jcs import canonicalize

logger = logging.getLogger("tenure")
DISCONNECT_POLL_SECONDS = 0.25
CONFLICTS = frozenset(
    {Outcome.HELD, Outcome.LOST, Outcome.CONFLICT, Outcome.IDEMPOTENCY_CONFLICT}
    | {Outcome.NOT_ACTIVE}
)


@dataclass
class Runtime:
    """What the routes share; built in the lifespan, so tests get a fresh one per app."""

    service: LeaseService
    tenancy: Tenancy
    limiter: RateLimiter


async def read_body(request: Request, limit: int) -> bytes:
    """Refuse a body over `limit` with 413 before reading (or parsing) the rest of it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
        chunks.append(chunk)
    body = b"".join(chunks)
    request.state.body = body
    return body


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: bytes) -> M:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as error:
        raise input_error(error) from error


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise InputError("malformed_json", f"body is not JSON: {error}") from error


def _entry_named_by(log: LogReader, document: Any) -> bytes | None:
    """The server's own copy of the entry a saved response says it appended."""
    try:
        index = document["data"]["ledger"]["logIndex"]
    except (KeyError, TypeError):
        return None
    return log.entry(index) if isinstance(index, int) and index >= 0 else None


def status_of(answer: Answer) -> int:
    if answer.fresh_grant:
        return 201
    return 409 if answer.outcome in CONFLICTS else 200


def _tune_gc() -> None:
    """Every answer allocates thousands of short-lived, acyclic objects; with CPython's default
    thresholds the cycle collector runs several times per request and keeps rescanning the
    long-lived state. Freeze what start-up built and collect young objects far less often:
    ~15% more lease events/s in bench/lease_bench.py."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        conn = open_db(settings.data_dir)
        reader = connect(settings.data_dir / DB_NAME)
        keys = signing_keys(settings.keys_dir, now_ms())
        record_keys(conn, keys[-1], now_ms())
        app.state.log = LogReader(reader, settings.origin or default_origin(reader), keys[-1])
        app.state.issuer = Issuer(Signer(keys[-1].private_key))
        limits = Limits(settings.ttl_max_seconds, settings.lifecycle_seconds)
        service = LeaseService(conn, load_or_create_secret(settings.keys_dir), limits)
        await service.start(settings.sweep_interval)
        tenancy = Tenancy(reader, settings.require_api_key, settings.allow_anonymous)
        app.state.runtime = Runtime(service, tenancy, RateLimiter(settings.rate_limit))
        _tune_gc()
        access_log.install()
        sealer = asyncio.create_task(
            checkpoint_forever(app.state.log, service, settings.checkpoint_interval)
        )
        try:
            yield
        finally:
            sealer.cancel()
            await service.stop()
            reader.close()
            conn.close()

    app = FastAPI(title="tenure", version="0.1.0", lifespan=lifespan)
    _routes(app, settings)
    log_routes(app)
    bundle_routes(app)
    return app


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _tenant(request: Request, namespace: str | None, sub: str | None) -> str:
    runtime = _runtime(request)
    namespace = namespace or request.headers.get("tenure-namespace")
    tenant = runtime.tenancy.resolve(request.headers.get("authorization"), namespace, sub)
    wait = runtime.limiter.retry_after(tenant, time.monotonic())
    if wait is not None:
        raise InputError("rate_limited", "too many requests for this tenant", status=429) from (
            _RetryAfter(wait)
        )
    return tenant


class _RetryAfter(Exception):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


def _call(body: LeaseBody, op: str, tenant: str, settings: Settings) -> LeaseCall:
    """Check what the schema cannot (per-op requirements, operator limits) and build the call."""
    if op in ("acquire", "wait") and body.holder is None:
        raise InputError("missing", f"holder is required for {op}", "holder")
    if op in ("renew", "release", "complete") and body.owner_token is None:
        raise InputError("missing", f"ownerToken is required for {op}", "ownerToken")
    ttl = body.ttl_seconds or 30
    if ttl > settings.ttl_max_seconds:
        message = f"ttlSeconds must be 1..{settings.ttl_max_seconds}"
        raise InputError("out_of_range", message, "ttlSeconds")
    if body.wait_seconds is not None and op not in ("acquire", "wait"):
        raise InputError("invalid_value", "waitSeconds applies to acquire and wait", "waitSeconds")
    if "result" in body.model_fields_set and op != "complete":
        raise InputError("invalid_value", "result applies to complete only", "result")
    if op == "complete" and len(canonicalize(body.result)) > 32 * 1024:
        raise InputError("too_large", "result exceeds 32 KiB of canonical JSON", "result", 413)
    if tenant == ANONYMOUS and not high_entropy(body.resource):
        message = "in the anonymous tenant a resource must be a random string of 32..200 chars"
        raise InputError("low_entropy", message, "resource")
    return LeaseCall(
        op=op,
        tenant=tenant,
        resource=body.resource,
        holder=body.holder,
        ttl_seconds=ttl,
        owner_token=body.owner_token,
        fencing_token=body.fencing_token,
        capacity=body.capacity,
        wait_seconds=body.wait_seconds,
        request_id=body.request_id,
        fingerprint=body.fingerprint,
        scope=body.scope,
        result=body.result,
    )


async def _lease(request: Request, settings: Settings, path_op: str | None) -> Response:
    limit = settings.complete_body_max_bytes
    if path_op is not None and path_op != "complete":
        limit = settings.body_max_bytes
    suite_of(request)
    raw_body = await read_body(request, limit)
    body = parse(LeaseBody, raw_body)
    op = path_op or body.op
    if op is None:
        raise InputError("missing", "op is required in the body or the path", "op")
    if body.op is not None and body.op != op:
        raise InputError("invalid_value", f"op {body.op!r} contradicts the path", "op")
    if op != "complete" and len(raw_body) > settings.body_max_bytes:
        raise InputError("too_large", f"body exceeds {settings.body_max_bytes} bytes", status=413)
    call = _call(body, op, _tenant(request, body.namespace, body.tenant_id), settings)
    service = _runtime(request).service
    if op == "wait" or call.wait_seconds is not None:
        answer = await _unless_disconnected(request, service.lease(call))
    else:
        answer = await service.lease(call)
    entry = answer.entry
    if entry is None and answer.data.get("replayed"):
        entry = request.app.state.log.entry(answer.data["ledger"]["logIndex"])
    headers = None
    if answer.outcome is Outcome.HELD:
        headers = {"Retry-After": str(answer.data["retryAfterSeconds"])}
    return respond(request, answer.data, status_of(answer), headers, entry)


async def _unless_disconnected(request: Request, waiting: Awaitable[Answer]) -> Answer:
    """Run a blocking wait, but give up (leaving the queue) if the caller hangs up: uvicorn
    does not cancel a handler whose client is gone, and a slot granted to nobody would stay
    blocked until its TTL ran out."""
    task = asyncio.ensure_future(waiting)
    while True:
        done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise ClientGone


class ClientGone(Exception):
    """The caller disconnected while waiting; nobody is left to answer."""


def _scope_tenant(request: Request, scope: str, body: ScopeBody | None) -> str:
    namespace = body.namespace if body else None
    tenant = _tenant(request, namespace, body.tenant_id if body else None)
    if len(scope) > 128 or not scope.isprintable():
        raise InputError("out_of_range", "scope must be 1..128 printable characters", "scope")
    if tenant == ANONYMOUS and not high_entropy(scope):
        message = "in the anonymous tenant a scope must be a random string of 32..128 chars"
        raise InputError("low_entropy", message, "scope")
    return tenant


def _routes(app: FastAPI, settings: Settings) -> None:
    lease_doc = {"requestBody": {"content": {JSON: {"schema": LeaseBody.model_json_schema()}}}}

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> Response:
        headers = None
        if isinstance(error.__cause__, _RetryAfter):
            headers = {"Retry-After": str(max(1, ceil(error.__cause__.seconds)))}
        return error_response(request, error, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_query(request: Request, error: RequestValidationError) -> Response:
        first = error.errors()[0]
        field = str(first["loc"][-1]) if first.get("loc") else None
        refusal = InputError("invalid_value", f"{field}: {first['msg']}", field)
        if request.url.path.startswith("/api/v1/log/"):
            return raw({"data": {"status": "fail", "error": refusal.as_data()}}, 422)
        return error_response(request, refusal)

    @app.exception_handler(ClientGone)
    async def gone(request: Request, error: ClientGone) -> Response:
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        refusal = InputError(code, str(error.detail), status=error.status_code)
        return raw({"data": {"status": "fail", "error": refusal.as_data()}}, error.status_code)

    @app.exception_handler(Exception)
    async def crashed(request: Request, error: Exception) -> Response:
        logger.exception("unhandled error on %s", request.url.path)
        return unknown_response(request, "internal error; the outcome is unknown", 500)

    @app.exception_handler(StorageUnavailable)
    async def unavailable(request: Request, error: StorageUnavailable) -> Response:
        return unknown_response(request, f"storage unavailable: {error}")

    @app.post("/api/v1/lease", openapi_extra=lease_doc)
    async def lease(request: Request) -> Response:
        """Run a lease operation named by the body's `op`."""
        return await _lease(request, settings, None)

    @app.post("/api/v1/lease/{op}", openapi_extra=lease_doc)
    async def lease_op(request: Request, op: str) -> Response:
        """Run the lease operation named in the path."""
        if op not in OPS:
            raise InputError("invalid_value", f"op must be one of {', '.join(OPS)}", "op")
        return await _lease(request, settings, op)

    @app.post("/api/v1/namespaces", status_code=201)
    async def namespaces(request: Request) -> Response:
        """Mint a namespace: a 256-bit secret whose hash names a fresh tenant."""
        parse(NamespaceBody, await read_body(request, settings.body_max_bytes))
        data = {"status": "pass", "namespace": mint_namespace(), "entropyBits": 256}
        return respond(request, data, 201)

    @app.get("/api/v1/scopes/{scope}")
    async def scope_packet(request: Request, scope: str) -> Response:
        """The resume packet: the caller's live leases in this scope."""
        tenant = _scope_tenant(request, scope, None)
        service = _runtime(request).service
        await service.durable(service.committer.barrier())
        held = service.scope_leases(tenant, scope)
        data = {"status": "pass", "scope": scope, "leases": held, "count": len(held)}
        return respond(request, data | {"ledger": service.position().as_data()}, 200)

    @app.post("/api/v1/scopes/{scope}/release")
    async def scope_release(request: Request, scope: str) -> Response:
        """Release every lease the caller holds in this scope."""
        body = parse(ScopeBody, await read_body(request, settings.body_max_bytes))
        tenant = _scope_tenant(request, scope, body)
        service = _runtime(request).service
        released = await service.release_scope(tenant, scope)
        data = {"status": "pass", "outcome": "RELEASED", "scope": scope, "releasedIds": released}
        return respond(request, data | {"ledger": service.position().as_data()}, 200)

    @app.post("/api/v1/scopes/{scope}/heartbeat")
    async def scope_heartbeat(request: Request, scope: str) -> Response:
        """Heartbeat the scope's dead-man switch (`deadSeconds` arms it, 0 disarms it)."""
        body = parse(ScopeBody, await read_body(request, settings.body_max_bytes))
        if body.dead_seconds is None:
            raise InputError("missing", "deadSeconds is required", "deadSeconds")
        tenant = _scope_tenant(request, scope, body)
        beat = await _runtime(request).service.heartbeat(tenant, scope, body.dead_seconds)
        return respond(request, {"status": "pass", "scope": scope, **beat}, 200)

    @app.post("/api/v1/verify-provenance")
    async def verify_provenance(request: Request) -> Response:
        """Verify a saved response, a credential or a bundle; free and without side effects."""
        document = parse_json(await read_body(request, settings.verify_body_max_bytes))
        log: LogReader = request.app.state.log
        trusted = {str(key["did"]) for key in log.keys()}  # noqa: SIM118
        report = verify_document(document, trusted, entry=_entry_named_by(log, document))
        return respond(request, report.as_data(), 200)

    @app.get("/healthz")
    async def healthz(request: Request) -> Response:
        """Liveness and storage health."""
        service = _runtime(request).service
        ok = service.healthy
        data = {"status": "pass" if ok else "unknown", "storage": "ok" if ok else "unavailable"}
        return raw({"data": data | {"ledger": service.position().as_data()}}, 200 if ok else 503)
