"""The HTTP edge: `create_app(settings)`, thin routes over the lease service (DESIGN §3)."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from math import ceil
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import logs as access_log
from api.bundle_routes import bundle_routes
from api.explorer_routes import explorer_routes
from api.lease_routes import ClientGone, lease_routes
from api.log_routes import log_routes
from api.requests import RetryAfter, Runtime, limit_client, parse_json, read_body
from api.responses import error_response, raw, respond, unknown_response
from api.schemas import InputError
from api.scope_routes import scope_routes
from api.settings import Settings
from api.tenancy import RateLimiter, Tenancy
from api.verifying import BoundedVerifier
from ledger.calls import Limits, StorageUnavailable, now_ms
from ledger.log import LogReader
from ledger.runtime import Runtime as Core
from ledger.runtime import RuntimeConfig
from verify.trust import keyring_periods

logger = logging.getLogger("tenure")


def _entry_named_by(log: LogReader, document: Any) -> bytes | None:
    """The server's own copy of the entry a saved response says it appended."""
    try:
        index = document["data"]["ledger"]["logIndex"]
    except (KeyError, TypeError):
        return None
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 2**63:
        return None  # no such entry: the verifier's entry check fails, the server does not
    return log.entry(index)


def _tune_gc() -> None:
    """Every answer allocates thousands of short-lived, acyclic objects; with CPython's default
    thresholds the cycle collector runs several times per request and keeps rescanning the
    long-lived state. Freeze what start-up built and collect young objects far less often:
    ~15% more lease events/s in bench/lease_bench.py."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)


def runtime_config(settings: Settings, clock: Callable[[], int] = now_ms) -> RuntimeConfig:
    """The server's settings as the runtime's configuration."""
    return RuntimeConfig(
        clock=clock,
        data_dir=settings.data_dir,
        database=settings.database,
        keys_dir=settings.keys_dir,
        origin=settings.origin,
        limits=Limits(settings.ttl_max_seconds, settings.lifecycle_seconds),
        sweep_interval=settings.sweep_interval,
        checkpoint_interval=settings.checkpoint_interval,
    )


def create_app(settings: Settings, clock: Callable[[], int] = now_ms) -> FastAPI:
    """The HTTP front of DESIGN §3 over a :class:`ledger.runtime.Runtime` opened, started and
    stopped by the app's lifespan; every route reads what it needs from ``app.state``.

    ``clock`` (ms since the epoch) is the runtime's only clock: lease time, credential dates and
    checkpoint timestamps; in-process tests pass a fixed one.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        core = Core.open(runtime_config(settings, clock))
        await core.start()
        app.state.core, app.state.log, app.state.issuer = core, core.log, core.issuer
        tenancy = Tenancy(core.storage, settings.require_api_key, settings.allow_anonymous)
        app.state.runtime = Runtime(core.service, tenancy, RateLimiter(settings.rate_limit))
        _tune_gc()
        access_log.install()
        try:
            yield
        finally:
            await core.stop()

    app = FastAPI(title="tenure", version="0.1.0", lifespan=lifespan)
    _handlers(app)
    lease_routes(app, settings)
    scope_routes(app, settings)
    _routes(app, settings)
    log_routes(app)
    bundle_routes(app)
    explorer_routes(app)
    return app


def _handlers(app: FastAPI) -> None:
    """Domain errors become HTTP answers here, in one place (STYLE 7)."""

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> Response:
        headers = None
        if isinstance(error.__cause__, RetryAfter):
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
        message = "internal error; the outcome is unknown"
        try:
            return unknown_response(request, message, 500)
        except Exception:  # signing the answer failed too: still answer in the API's shape
            data = {"status": "unknown", "error": {"code": "internal", "message": message}}
            return raw({"data": data}, 500)

    @app.exception_handler(StorageUnavailable)
    async def unavailable(request: Request, error: StorageUnavailable) -> Response:
        return unknown_response(request, f"storage unavailable: {error}")


def _routes(app: FastAPI, settings: Settings) -> None:
    verifier = BoundedVerifier(settings.verify_concurrency, settings.verify_budget_seconds)

    @app.post("/api/v1/verify-provenance")
    async def verify_provenance(request: Request) -> Response:
        """Verify a saved response, a credential or a bundle; free and without side effects."""
        limit_client(request)
        document = parse_json(await read_body(request, settings.verify_body_max_bytes))
        log: LogReader = request.app.state.log
        trusted = keyring_periods(log.keys())  # a retired key vouches for nothing after
        report = await verifier.verify(document, trusted, _entry_named_by(log, document))
        return respond(request, report.as_data(), 200)

    @app.get("/healthz")
    async def healthz(request: Request) -> Response:
        """Liveness, storage and background-task health."""
        core: Core = request.app.state.core
        data = core.health() | {"ledger": core.service.position().as_data()}
        return raw({"data": data}, 200 if core.healthy else 503)
