"""The hot lease routes as plain ASGI, in front of FastAPI and its middleware (issue 10).

``POST /api/v1/lease`` and ``POST /api/v1/lease/{op}`` are most of a server's traffic, and their
handler reads its own body and validates it itself (``api.lease_routes.lease_answer``): FastAPI's
routing, dependency solving and its exception and exit-stack middleware add nothing to them but
~10% of the instructions per event (measured with bench/lease_profile.py), and the layers in front
of those (Starlette's ServerErrorMiddleware, FastAPI's telemetry and body-limit middleware, the
request metrics) another few per cent. ``api.app.TenureAPI`` hands these two routes to
:class:`LeaseFront` before any of them, and it keeps what each layer guarantees:

- refusals are answered by the app's own exception handlers (so every refusal has the same shape);
- an exception no handler claims is answered by the app's ``Exception`` handler (a signed 500,
  logged) if nothing was sent yet, and raised again for the server to log, as
  ServerErrorMiddleware does;
- every request is timed and counted and written to the access log (``done``), as
  ``api.metrics.RequestMetrics`` does for the others, with the status it answered (500 if none);
- there is no body limit of FastAPI's to keep (tenure sets none: ``read_body`` applies its own),
  and no telemetry (tenure turns it off).

Everything else — other methods, other paths, a request behind a ``root_path`` — goes through
FastAPI, whose two lease routes answer it and document these in the OpenAPI.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import Receive, Scope, Send

LEASE_PATH = "/api/v1/lease"
ROUTE_KEY = "tenure.route"
"""The scope key naming the route template this middleware answered (it bypasses the router)."""
_PREFIX = LEASE_PATH + "/"

Handler = Callable[[Request, str | None], Awaitable[Response]]
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]
Done = Callable[[Scope, int, float], None]
"""Called once a request is answered: its scope, the status sent (500 if none) and its seconds."""


def lease_op_of(scope: Scope) -> tuple[bool, str | None]:
    """(True, the path's op or None) for a POST the lease routes answer; (False, None) else.

    The same paths FastAPI's two routes match: exactly ``/api/v1/lease``, or one non-empty
    segment after it (``{op}``, checked against the ops by the handler, as the route does).
    """
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return False, None
    path: str = scope["path"]
    if path == LEASE_PATH:
        return True, None
    if path.startswith(_PREFIX):
        op = path[len(_PREFIX) :]
        if op and "/" not in op:
            return True, op
    return False, None


class LeaseFront:
    """Answers the lease routes with ``handler``, the layers in front of it folded in (see
    module doc): ``owner``'s exception handlers, the server-error answer, and ``done``."""

    def __init__(self, handler: Handler, owner: FastAPI, done: Done) -> None:
        self.handler = handler
        self.owner = owner  # whose exception handlers answer refusals and crashes
        self.done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send, op: str | None) -> None:
        """Answer one request that :func:`lease_op_of` found to be a lease route's (``op``)."""
        scope[ROUTE_KEY] = LEASE_PATH if op is None else _PREFIX + "{op}"  # for the metrics
        began, status, sending = time.perf_counter(), 500, False
        try:
            try:
                response = await self._answer(Request(scope, receive), op)
                status, sending = response.status_code, True  # its first message is the start
                await response(scope, receive, send)
            finally:
                self.done(scope, status, time.perf_counter() - began)
        except Exception as error:
            if not sending:
                crashed = await self._crash_handler()(Request(scope), error)
                await crashed(scope, receive, send)
            raise  # as ServerErrorMiddleware does: the server logs it

    async def _answer(self, request: Request, op: str | None) -> Response:
        try:
            return await self.handler(request, op)
        except Exception as error:
            answer = _handler_for(self.owner.exception_handlers, error)
            if answer is None:
                raise
            return await answer(request, error)

    def _crash_handler(self) -> ErrorHandler:
        handlers: Mapping[Any, Any] = self.owner.exception_handlers
        crashed: ErrorHandler | None = handlers.get(Exception)
        if crashed is None:
            raise RuntimeError("the app has no Exception handler for the lease routes")
        return crashed


def _handler_for(handlers: Mapping[Any, Any], error: Exception) -> ErrorHandler | None:
    """The app's handler for ``error``, looked up as Starlette's ExceptionMiddleware does (by
    the exception's MRO), leaving out the catch-all that ServerErrorMiddleware owns."""
    for kind in type(error).__mro__:
        if kind is Exception:
            return None
        if kind in handlers:
            found: ErrorHandler = handlers[kind]
            return found
    return None
