"""How errors become HTTP answers, in one place (STYLE 7): a refusal in tenure's words (signed
on the enveloped paths), FastAPI's own query and routing errors restated that way, a storage
outage as ``unknown`` (its cause to the operator's log only), a crash as a signed 500."""

from __future__ import annotations

import logging
from math import ceil
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import logs as access_log
from api.lease_routes import ClientGone
from api.requests import RetryAfter
from api.responses import (
    JSON,
    STORAGE_UNAVAILABLE,
    error_response,
    raw,
    unknown_response,
)
from api.schemas import InputError
from ledger.lease.calls import StorageUnavailable
from ledger.lease.provenance import dumps
from ledger.storage import StorageError

logger = logging.getLogger("tenure")


def install_error_handlers(app: FastAPI) -> None:
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
