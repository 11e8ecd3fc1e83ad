"""`/metrics` in the Prometheus text format, and the HTTP edge's hooks that feed it.

Labels stay bounded: a route is its template (``/api/v1/lease/{op}``, never a resource or scope
name), a lease answer is its op and outcome. The state of the running service (tree size, age
of the latest checkpoint, live leases, waiters) is read when scraped, not kept up to date on the
request path. Counters and histograms are process-wide (``ledger/metrics.py`` explains the
multiprocess mode for several workers); the state gauges are the answering process's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.accel.hot_route import ROUTE_KEY
from api.logs import AccessLog
from api.requests import edge_of
from api.tally import Tally
from ledger.runtime import Runtime

# No `_created` series: a third fewer lines a scrape, and no dashboard needs them.
disable_created_metrics()  # type: ignore[no-untyped-call]

LEASE_ANSWERS = Counter(
    "tenure_lease_answers_total", "Lease operations answered, by op and outcome.", ["op", "outcome"]
)
REQUEST_SECONDS = Histogram(
    "tenure_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template and method.",
    ["route", "method"],
)
RATE_LIMITED = Counter(
    "tenure_rate_limited_total", "Requests refused with 429 (rate limit), by route.", ["route"]
)
SERVER_ERRORS = Counter(
    "tenure_http_server_errors_total",
    "Answers with a 5xx status, by route and status.",
    ["route", "status"],
)


# The labelled children, looked up once: ``labels()`` validates and locks on every call, and
# these run for every request. Bounded: ops, outcomes, route templates and methods are closed sets.
_ANSWERS: dict[tuple[str, str], Any] = {}
_TIMINGS: dict[tuple[str, str], Any] = {}


TALLY = Tally()
"""The request path's counts and timings, written once per event-loop turn (api/tally.py)."""


def lease_answered(op: str, outcome: str) -> None:
    """Count one lease answer (the HTTP edge calls this once per lease request)."""
    child = _ANSWERS.get((op, outcome))
    if child is None:
        child = _ANSWERS[(op, outcome)] = LEASE_ANSWERS.labels(op, outcome)
    TALLY.inc(child)


class RequestMetrics:
    """Pure ASGI middleware (no BaseHTTPMiddleware: it would break disconnect polling of
    waits): times every HTTP request and counts 429s and 5xx by route template; with an
    ``access`` log, writes each request's line there (api/logs.py)."""

    def __init__(self, app: ASGIApp, access: AccessLog | None = None) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            request_done(scope, status, time.perf_counter() - started, self.access)


def request_done(scope: Scope, status: int, seconds: float, access: AccessLog | None) -> None:
    """Time and count one answered request and write its access-log line (``access``, if any):
    what RequestMetrics does for every request, and ``api.accel.hot_route.HotRoute`` for its own."""
    _observe(scope, status, seconds)
    if access is not None:
        access.request(scope, status)


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _observe(scope: Scope, status: int, seconds: float) -> None:
    route = getattr(scope.get("route"), "path", None) or scope.get(ROUTE_KEY, "unmatched")
    method = scope["method"] if scope["method"] in METHODS else "other"  # labels stay bounded
    timing = _TIMINGS.get((route, method))
    if timing is None:
        timing = _TIMINGS[(route, method)] = REQUEST_SECONDS.labels(route, method)
    TALLY.observe(timing, seconds)
    if status == 429:
        RATE_LIMITED.labels(route).inc()
    elif status >= 500:
        SERVER_ERRORS.labels(route, str(status)).inc()


class StateCollector(Collector):
    """Gauges read from the running service at scrape time."""

    def __init__(self, core: Runtime, clock: Callable[[], int]) -> None:
        self._core = core
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        core, now = self._core, self._clock()
        yield _gauge("tenure_ledger_tree_size", "Entries in the durable ledger.", core.log.size())
        latest = core.storage.latest_checkpoint()
        age = float("nan") if latest is None else max(0, now - latest.timestamp) / 1000
        yield _gauge("tenure_checkpoint_age_seconds", "Age of the latest signed checkpoint.", age)
        live = core.gauges.live_leases(now)
        yield _gauge("tenure_leases_live", "Leases held now (not expired).", live)
        waiting = core.gauges.queued_waiters()  # over every worker, not only this one
        yield _gauge("tenure_waiters_queued", "Callers waiting for a lease now.", waiting)


def _gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, value=value)


def _process_registry() -> CollectorRegistry:
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


def metrics_routes(app: FastAPI) -> None:
    """``GET /metrics``; the lifespan's registry of state (``EdgeState.metrics``)."""

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        """Prometheus text exposition format 0.0.4."""
        state = edge_of(request).metrics
        TALLY.flush()  # what this turn answered before the scrape, too
        body = generate_latest(_process_registry()) + generate_latest(state)
        return Response(body, 200, media_type=CONTENT_TYPE_LATEST)


def state_registry(core: Runtime, clock: Callable[[], int]) -> CollectorRegistry:
    """A registry of the gauges of ``core``, for one app."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StateCollector(core, clock))
    return registry
