"""``/mcp`` in ``tenure serve``: the tools of ``api/mcp_server.py`` over streamable HTTP,
authenticated like the API (docs/decisions/0008-mcp-over-http.md).

Every request to /mcp is authenticated before the MCP SDK reads it, by the API's own rule
(``Tenancy.resolve``: a Bearer API key, a ``Tenure-Namespace``, or the anonymous tenant where the
server allows it); a refusal is the API's own signed 401 or 422. Each tool call then runs as a
request to this very app, in-process (``httpx.ASGITransport``, no socket), carrying the caller's
credentials and address: the same validation, tenancy, rate limits, ledger entries and signed
receipts as a call over HTTP, and no second code path to keep in step.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import httpx
from fastapi import FastAPI
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.client import AsyncClient
from api.requests import runtime_of
from api.responses import error_response, unknown_response
from api.schemas import InputError
from api.settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

PATH = "/mcp"
INTERNAL_URL = "http://tenure.internal"  # never resolved: the transport is the app itself
ENVELOPE_BYTES = 64 * 1024  # JSON-RPC around the largest tool argument, a 1 MiB document
logger = logging.getLogger("tenure")

Sessions = Callable[[], AbstractAsyncContextManager[None]]


def mount_mcp(app: FastAPI, settings: Settings) -> Sessions:
    """Serve MCP at /mcp if the ``mcp`` extra is installed. The returned context manager runs
    the MCP transport; enter it in the app's lifespan once the runtime has started."""
    try:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from api.mcp_server import build_server
    except ImportError as error:
        logger.warning("no MCP at %s (%s); pip install 'tenure[mcp]'", PATH, error)
        return nullcontext
    endpoint = McpEndpoint()
    server = build_server(lambda ctx: _client_for(app, ctx.request))
    app.router.routes.append(Route(PATH, endpoint, include_in_schema=False))

    @asynccontextmanager
    async def sessions() -> AsyncIterator[None]:
        # Stateless: credentials are read from every request, so a session id is never a
        # credential, and no per-session state outlives a request (or a restart).
        manager = StreamableHTTPSessionManager(
            server,
            json_response=True,
            stateless=True,
            max_request_body_size=settings.verify_body_max_bytes + ENVELOPE_BYTES,
        )
        async with manager.run():
            endpoint.manager = manager
            try:
                yield
            finally:
                endpoint.manager = None

    return sessions


class McpEndpoint:
    """The ASGI app at /mcp: authenticate as the API does, then hand over to the MCP SDK."""

    def __init__(self) -> None:
        self.manager: StreamableHTTPSessionManager | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            _authenticate(request)
        except InputError as error:
            await error_response(request, error)(scope, receive, send)
            return
        if self.manager is None:  # between the lifespan's start and stop only
            await unknown_response(request, "MCP is not running")(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def _authenticate(request: Request) -> None:
    """Refuse a caller the API would refuse: a bad or unknown key, a malformed namespace, no
    credentials where the server requires them. Rate limits apply to each tool call."""
    tenancy = runtime_of(request).tenancy
    headers = request.headers
    tenancy.resolve(headers.get("authorization"), headers.get("tenure-namespace"), None)


def _client_for(app: FastAPI, request: Any) -> AbstractAsyncContextManager[AsyncClient]:
    """A client for one tool call: this app, in-process, as the caller of ``request``."""
    if not isinstance(request, Request):  # only streamable HTTP reaches this server
        raise TypeError("the /mcp server runs over HTTP only")
    authorization = request.headers.get("authorization")
    api_key = None if authorization is None else authorization.partition(" ")[2].strip()
    peer = request.client
    address = (peer.host, peer.port) if peer is not None else ("unknown", 0)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=address)
    namespace = request.headers.get("tenure-namespace")
    return AsyncClient(INTERNAL_URL, api_key, namespace, transport=transport)
