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
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

LEASE_PATH = "/api/v1/lease"
ROUTE_KEY = "tenure.route"
"""The scope key naming the route template this middleware answered (it bypasses the router)."""
_PREFIX = LEASE_PATH + "/"
_OP_ROUTE = _PREFIX + "{op}"

Handler = Callable[[Request, str | None], Awaitable[Response]]
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]
SendResponse = Callable[[Response], Awaitable[None]]
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


class HotAnswer:
    """The lease routes' answer, given by ``handler`` with ``app``'s refusals (its exception
    handlers, read at each refusal); ``done`` times and counts. Shared by :class:`HotRoute`
    (ASGI middleware) and :mod:`api.accel.hot_protocol` (uvicorn's protocol)."""

    def __init__(self, app: Starlette, handler: Handler, done: Done) -> None:
        self.app, self.handler, self.done = app, handler, done

    @property
    def errors(self) -> Mapping[Any, Any]:
        return self.app.exception_handlers

    async def serve(
        self, scope: Scope, receive: Receive, op: str | None, send: SendResponse
    ) -> None:
        """Answer the lease route ``op`` names and ``send`` the answer, timed and counted
        (``done``, with 500 if it raised); a crash is raised, for the caller to answer with
        :meth:`crashed`."""
        began, status = time.perf_counter(), 500
        try:
            response = await self.answer(scope, receive, op)
            status = response.status_code
            await send(response)
        finally:
            self.done(scope, status, time.perf_counter() - began)

    async def answer(self, scope: Scope, receive: Receive, op: str | None) -> Response:
        """The answer to the lease route ``op`` names, or the app's refusal of it; a crash is
        raised."""
        scope[ROUTE_KEY] = LEASE_PATH if op is None else _OP_ROUTE  # for the metrics
        scope["app"] = self.app  # as Starlette's app sets it (``Request.app``)
        request = Request(scope, receive)
        try:
            return await self.handler(request, op)
        except Exception as error:
            answer = _handler_for(self.errors, error)
            if answer is None:
                raise
            return await answer(request, error)

    async def crashed(self, scope: Scope, error: Exception) -> Response | None:
        """The app's answer to a crash (its handler of 500 or of Exception, as Starlette's
        ServerErrorMiddleware picks it); None if it has none."""
        handler = self.errors.get(500) or self.errors.get(Exception)
        if handler is None:
            return None
        response: Response = await handler(Request(scope), error)
        return response


class HotRoute:
    """ASGI middleware answering the lease routes with a :class:`HotAnswer` (``hot``), and
    anything else with the app it wraps."""

    def __init__(self, app: ASGIApp, hot: HotAnswer) -> None:
        self.app, self.hot = app, hot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot, op = lease_op_of(scope)
        if not hot:
            await self.app(scope, receive, send)
            return

        async def asgi(response: Response) -> None:
            await response(scope, receive, send)

        await self.hot.serve(scope, receive, op, asgi)


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
