"""The hot route: ASGI middleware that answers the two lease routes before FastAPI routes them.

``POST /api/v1/lease`` and ``POST /api/v1/lease/{op}`` are most of a server's traffic, and their
handler reads and validates its own body (``api.lease_routes.lease_answer``): FastAPI's routing,
dependency solving, the request metrics middleware and its exception middleware add nothing to
them but instructions. Added outermost among the app's middleware, this answers them with the
app's own exception handlers (the same refusals), counts and logs them as the metrics middleware
does (``done``), and leaves a crash to Starlette's ServerErrorMiddleware in front of it (a signed
500, then raised for the server to log). Anything else goes on to FastAPI, whose two lease routes
answer it the same way and document them in the OpenAPI.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

LEASE_PATH = "/api/v1/lease"
ROUTE_KEY = "tenure.route"
"""The scope key naming the route template this middleware answered (it bypasses the router)."""
_PREFIX = LEASE_PATH + "/"
_OP_ROUTE = _PREFIX + "{op}"

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


class HotRoute:
    """Answers the lease routes with ``handler``; ``errors`` are the app's exception handlers
    (its ``exception_handlers``, read at each refusal) and ``done`` times and counts."""

    def __init__(
        self, app: ASGIApp, handler: Handler, errors: Mapping[Any, Any], done: Done
    ) -> None:
        self.app, self.handler, self.errors, self.done = app, handler, errors, done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot, op = lease_op_of(scope)
        if not hot:
            await self.app(scope, receive, send)
            return
        scope[ROUTE_KEY] = LEASE_PATH if op is None else _OP_ROUTE  # for the metrics
        began, status = time.perf_counter(), 500
        try:
            request = Request(scope, receive)
            try:
                response = await self.handler(request, op)
            except Exception as error:
                answer = _handler_for(self.errors, error)
                if answer is None:
                    raise  # ServerErrorMiddleware answers and raises it again
                response = await answer(request, error)
            status = response.status_code
            await response(scope, receive, send)
        finally:
            self.done(scope, status, time.perf_counter() - began)


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
