"""The HTTP edge: `create_app(settings)`, thin routes over the lease service (DESIGN §3)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import Scope

from api import logs as access_log
from api.accel import parse_accel, tune_gc
from api.accel.hot_route import HotAnswer, HotRoute
from api.bundle_routes import bundle_routes
from api.docs_routes import docs_routes
from api.error_handlers import install_error_handlers
from api.explorer_routes import explorer_routes
from api.lease_routes import lease_routes
from api.list_routes import list_routes
from api.log_routes import log_routes
from api.logs import AccessLog
from api.mcp_mount import mount_mcp
from api.metrics import RequestMetrics, metrics_routes, request_done, state_registry
from api.openapi import install_openapi
from api.requests import (
    EdgeState,
    edge_of,
    limit_client,
    parse_json,
    read_body,
    use_orjson,
)
from api.responses import (
    raw,
    respond,
    suite_of,
)
from api.scope_routes import scope_routes
from api.settings import Settings
from api.tenancy import RateLimiter, Tenancy
from api.tile_routes import tile_routes
from api.verifying import BoundedVerifier
from api.watch_routes import watch_routes
from api.witness_push import pushing
from ledger.lease.calls import Limits, now_ms
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
        core.service.native_record = "native-record" in accel
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
    install_error_handlers(app)
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
    if accel & {"hot-route", "hot-protocol"}:

        def done(scope: Scope, status: int, seconds: float) -> None:
            request_done(scope, status, seconds, access)

        hot = HotAnswer(app, lease_handler, done)
        if "hot-protocol" in accel:
            app.state.hot = hot  # api/serve_cli.py hands it to uvicorn's protocol
        if "hot-route" in accel:
            app.add_middleware(HotRoute, hot=hot)
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
