"""The hot lease routes as plain ASGI, in front of FastAPI's routing (issue 10).

``POST /api/v1/lease`` and ``POST /api/v1/lease/{op}`` are most of a server's traffic, and their
handler reads its own body and validates it itself (``api.lease_routes.lease_answer``): FastAPI's
route matching, dependency solving and its exception and exit-stack middleware add nothing to
them but ~10% of the instructions per event (measured with bench/lease_profile.py). This
middleware answers those two routes directly, with the app's own exception handlers (so every
refusal has the same shape), and passes everything else — other methods, other paths, the FastAPI
routes that document these two — through untouched.

It sits inside Starlette's ServerErrorMiddleware: an exception no handler of the app claims
propagates to it as it would from a route, and is answered and logged there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

LEASE_PATH = "/api/v1/lease"
ROUTE_KEY = "tenure.route"
"""The scope key naming the route template this middleware answered (it bypasses the router)."""
_PREFIX = LEASE_PATH + "/"

Handler = Callable[[Request, str | None], Awaitable[Response]]
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


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


class LeaseFastPath:
    """Pure-ASGI middleware answering the lease routes with ``handler`` (see module doc)."""

    def __init__(self, app: ASGIApp, handler: Handler, owner: FastAPI) -> None:
        self.app = app
        self.handler = handler
        self.owner = owner  # whose exception handlers answer refusals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot, op = lease_op_of(scope)
        if not hot:
            await self.app(scope, receive, send)
            return
        scope[ROUTE_KEY] = LEASE_PATH if op is None else _PREFIX + "{op}"  # for the metrics
        request = LeaseRequest(scope, receive)
        try:
            response = await self.handler(request, op)
        except Exception as error:
            answer = _handler_for(self.owner.exception_handlers, error)
            if answer is None:
                raise  # ServerErrorMiddleware answers (the app's Exception handler) and logs
            response = await answer(request, error)
        await response(scope, receive, send)


class FirstHeaders(Headers):
    """Starlette's Headers whose ``get`` is one dict lookup: a lease request reads five headers,
    and ``Headers.get`` scans the list for each. The dict keeps each name's first value, the one
    ``Headers.__getitem__`` finds (ASGI names are lower-case bytes, compared as they are)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope=scope)
        self._first = dict(reversed(self._list))  # the earliest of a repeated name written last

    def get(self, key: str, default: Any = None) -> Any:
        value = self._first.get(key.lower().encode("latin-1"))
        return default if value is None else value.decode("latin-1")


class LeaseRequest(Request):
    """The Request the lease routes get: its headers are :class:`FirstHeaders`."""

    @property
    def headers(self) -> Headers:
        found: Headers | None = self.__dict__.get("_headers")
        if found is None:
            found = self._headers = FirstHeaders(self.scope)
        return found


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
