"""The HTTP edge: `create_app(settings)`, thin routes over the lease service (DESIGN §3)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from math import ceil
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from api import logs as access_log
from api.accel import parse_accel, tune_gc
from api.accel.hot_route import HotRoute
from api.bundle_routes import bundle_routes
from api.docs_routes import docs_routes
from api.explorer_routes import explorer_routes
from api.lease_routes import ClientGone, lease_routes
from api.list_routes import list_routes
from api.log_routes import log_routes
from api.logs import AccessLog
from api.mcp_mount import mount_mcp
from api.metrics import RequestMetrics, metrics_routes, request_done, state_registry
from api.openapi import install_openapi
from api.requests import (
    EdgeState,
    RetryAfter,
    edge_of,
    limit_client,
    parse_json,
    read_body,
    use_orjson,
)
from api.responses import (
    JSON,
    STORAGE_UNAVAILABLE,
    error_response,
    raw,
    respond,
    suite_of,
    unknown_response,
)
from api.schemas import InputError
from api.scope_routes import scope_routes
from api.settings import Settings
from api.tenancy import RateLimiter, Tenancy
from api.tile_routes import tile_routes
from api.verifying import BoundedVerifier
from api.watch_routes import watch_routes
from api.witness_push import pushing
from ledger.lease.calls import Limits, StorageUnavailable, now_ms
from ledger.lease.provenance import dumps
from ledger.log.view import LogReader
from ledger.runtime import Runtime as Core
from ledger.runtime import RuntimeConfig
from ledger.storage import StorageError
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


# FastAPI ≥ 0.16x asks OpenTelemetry on every request whether a provider is configured; tenure
# configures none, so it says so once. Older FastAPI has no such parameter.
_NO_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters
    else {}
)


def runtime_config(settings: Settings, clock: Callable[[], int] = now_ms) -> RuntimeConfig:
    """The server's settings as the runtime's configuration."""
    return RuntimeConfig(
        clock=clock,
        data_dir=settings.data_dir,
        database=settings.database,
        keys_dir=settings.keys_dir,
        origin=settings.origin,
        host_name=settings.host_name,
        limits=Limits(settings.ttl_max_seconds, settings.lifecycle_seconds),
        sweep_interval=settings.sweep_interval,
        checkpoint_interval=settings.checkpoint_interval,
        key_watch_interval=settings.key_watch_interval,
    )


def create_app(settings: Settings, clock: Callable[[], int] = now_ms) -> FastAPI:
    """The HTTP front of DESIGN §3 over a :class:`ledger.runtime.Runtime` opened, started and
    stopped by the app's lifespan; every route reads what it needs from one ``EdgeState``
    (``api/requests.py``).

    ``clock`` (ms since the epoch) is the runtime's only clock: lease time, credential dates and
    checkpoint timestamps; in-process tests pass a fixed one.
    """

    access = AccessLog() if settings.access_log else None
    accel = parse_accel(settings.accel)
    use_orjson("orjson" in accel)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        core = Core.open(runtime_config(settings, clock))
        core.issuer.accelerate("native-answer" in accel)
        await core.start()
        tenancy = Tenancy(core.storage, settings.require_api_key, settings.allow_anonymous)
        limiter = RateLimiter(settings.rate_limit)
        app.state.edge = edge = EdgeState(core, tenancy, limiter, state_registry(core, clock))
        if "gc-tuning" in accel:
            tune_gc()
        access_log.install()
        hangup = _on_sighup(core)
        try:
            async with mcp_sessions(), pushing(edge, settings.witnesses):
                yield
        finally:
            hangup()
            await core.stop()
            if access is not None:
                access.flush()

    app = FastAPI(
        title="tenure",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        **_NO_TELEMETRY,
    )
    _handlers(app)
    lease_handler = lease_routes(app, settings)
    scope_routes(app, settings)
    list_routes(app)
    watch_routes(app, settings)
    _routes(app, settings)
    log_routes(app)
    tile_routes(app)
    bundle_routes(app, settings)
    explorer_routes(app)
    mcp_sessions = mount_mcp(app, settings)
    metrics_routes(app)
    docs_routes(app)
    install_openapi(app, settings)
    app.add_middleware(RequestMetrics, access=access)  # times all else, writes the access log
    if "hot-route" in accel:

        def done(scope: Scope, status: int, seconds: float) -> None:
            request_done(scope, status, seconds, access)

        errors = app.exception_handlers
        app.add_middleware(HotRoute, handler=lease_handler, errors=errors, done=done)
    return app


def _on_sighup(core: Core) -> Callable[[], object]:
    """SIGHUP reloads the signing key at once (`tenure keys rotate`; the key folder is also
    watched every second). Only where the loop may take signals (uvicorn's main thread, not an
    in-process test client); returns what removes the handler."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(core.reload_keys()))
    except (ValueError, RuntimeError, NotImplementedError):
        return lambda: None
    return lambda: loop.remove_signal_handler(signal.SIGHUP)


def _handlers(app: FastAPI) -> None:
    """Domain errors become HTTP answers here, in one place (STYLE 7)."""

    @app.exception_handler(InputError)
    async def refused(request: Request, error: InputError) -> Response:
        headers = None
        if isinstance(error.__cause__, RetryAfter):
            headers = {"Retry-After": str(max(1, ceil(error.__cause__.seconds)))}
        return _answer(request, error, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_query(request: Request, error: RequestValidationError) -> Response:
        return _answer(request, query_refusal(error.errors()[0]))

    @app.exception_handler(ClientGone)
    async def gone(request: Request, error: ClientGone) -> Response:
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        message = {404: "no such endpoint", 405: f"{request.method} is not allowed here"}
        text = message.get(error.status_code, str(error.detail))
        refusal = InputError(code, text, status=error.status_code)
        headers = getattr(error, "headers", None)
        return _answer(request, refusal, dict(headers) if headers else None)

    @app.exception_handler(Exception)
    async def crashed(request: Request, error: Exception) -> Response:
        logger.exception("unhandled error on %s", request.url.path)
        message = "internal error; the outcome is unknown"
        try:
            return unknown_response(request, message, 500)
        except Exception:  # signing the answer failed too: still answer in the API's shape
            data = {"status": "unknown", "error": {"code": "internal", "message": message}}
            return raw({"data": data}, 500)

    outage = access_log.Repeating(logger)

    @app.exception_handler(StorageUnavailable)
    @app.exception_handler(StorageError)  # a read of a database that went away (PostgreSQL)
    async def unavailable(request: Request, error: Exception) -> Response:
        """The same words for every caller; what the backend said — which may name a database
        host, port or user, or a file — goes to the operator's log only (once per cause and
        10 s: an outage fails every request)."""
        outage.warning(f"storage unavailable on {request.method} {request.url.path}", str(error))
        return unknown_response(request, STORAGE_UNAVAILABLE)


ENVELOPED = (
    "/api/v1/lease",
    "/api/v1/namespaces",
    "/api/v1/scopes",
    "/api/v1/verify-provenance",
    "/api/v1/watch",
)
"""Paths whose every answer, refusals included, is ``{data, _provenance}`` (DESIGN §3.3)."""


def _answer(
    request: Request, refusal: InputError, headers: dict[str, str] | None = None
) -> Response:
    """A refusal raised outside a route: signed on the enveloped paths, plain JSON elsewhere."""
    if request.url.path.startswith(ENVELOPED):
        return error_response(request, refusal, headers)
    data = {"status": "fail", "error": refusal.as_data()}
    return Response(dumps({"data": data}), refusal.status, headers, media_type=JSON)


def query_refusal(problem: Any) -> InputError:
    """A query or path parameter refused by FastAPI, as a 400 in tenure's words."""
    loc = [str(part) for part in problem.get("loc", ())]
    field = loc[-1] if loc else "query"
    kind = str(problem.get("type", ""))
    if kind == "missing":
        return InputError("missing", f"{field} is required", field, status=400)
    ctx = problem.get("ctx") or {}
    if "ge" in ctx or "le" in ctx:  # FastAPI names only the bound that was missed
        bound = f"≥ {ctx['ge']}" if "ge" in ctx else f"≤ {ctx['le']}"
        rule = f"{field} must be an integer {bound}"
        return InputError("out_of_range", rule, field, status=400)
    return InputError("wrong_type", f"{field} must be an integer", field, status=400)


def _routes(app: FastAPI, settings: Settings) -> None:
    verifier = BoundedVerifier(settings.verify_concurrency, settings.verify_budget_seconds)

    @app.post("/api/v1/verify-provenance")
    async def verify_provenance(request: Request) -> Response:
        """Verify a saved response, a credential or a bundle; free and without side effects."""
        suite_of(request)
        limit_client(request)
        document = parse_json(await read_body(request, settings.verify_body_max_bytes))
        log = edge_of(request).log
        trusted = keyring_periods(log.keys())  # a retired key vouches for nothing after
        report = await verifier.verify(document, trusted, _entry_named_by(log, document))
        return respond(request, report.as_data(), 200)

    @app.head("/healthz", include_in_schema=False)  # load balancers' health checks send HEAD
    @app.get("/healthz")
    async def healthz(request: Request) -> Response:
        """Liveness, storage and background-task health."""
        core = edge_of(request).core
        try:
            ledger = core.service.position().as_data()
        except StorageError:  # the database went away: unhealthy whatever the last commit did
            data = core.health() | {"status": "unknown", "storage": "unavailable"}
            return raw({"data": data}, 503)
        return raw({"data": core.health() | {"ledger": ledger}}, 200 if core.healthy else 503)

    @app.get("/readyz")
    async def readyz(request: Request) -> Response:
        """Readiness: storage writable, signing keys loaded, ledger head readable."""
        core = edge_of(request).core
        checks = await core.readiness()
        ok = all(value == "ok" for value in checks.values())
        data = {"status": "pass" if ok else "fail", "checks": checks}
        return raw({"data": data}, 200 if ok else 503)
