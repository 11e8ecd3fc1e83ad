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

import asyncio
import importlib.util
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
from api.requests import edge_of
from api.responses import error_response, unknown_response
from api.schemas import InputError
from api.settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

PATH = "/mcp"
INTERNAL_URL = "http://tenure.internal"  # never resolved: the transport is the app itself
ENVELOPE_BYTES = 64 * 1024  # JSON-RPC around the largest tool argument, a 1 MiB document
ONLY_POST = (
    "/mcp answers POST only: tenure sends no server-initiated messages, so there is no stream "
    "to GET and no session to DELETE"
)
logger = logging.getLogger("tenure")

Sessions = Callable[[], AbstractAsyncContextManager[None]]


def mount_mcp(app: FastAPI, settings: Settings) -> Sessions:
    """Serve MCP at /mcp if the ``mcp`` extra is installed. The returned context manager bounds
    the MCP transport's life; enter it in the app's lifespan once the runtime has started.

    The SDK is imported and its transport started on the first request to /mcp, not before:
    it is ~25 MB of every worker's memory, and most servers never see an MCP call.
    """
    if importlib.util.find_spec("mcp") is None:
        logger.warning("no MCP at %s (the mcp package is missing); pip install 'tenure[mcp]'", PATH)
        return nullcontext
    endpoint = McpEndpoint(app, settings)
    app.router.routes.append(Route(PATH, endpoint, include_in_schema=False))

    @asynccontextmanager
    async def sessions() -> AsyncIterator[None]:
        endpoint.running = True
        try:
            yield
        finally:
            endpoint.running = False
            await endpoint.stop()

    return sessions


class McpEndpoint:
    """The ASGI app at /mcp: authenticate as the API does, then hand over to the MCP SDK,
    started on the first request."""

    def __init__(self, app: FastAPI, settings: Settings) -> None:
        self.running = False
        self._app, self._settings = app, settings
        self._manager: StreamableHTTPSessionManager | None = None
        self._starting = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != "POST":  # no stream to open: see docs/decisions/0008
            refusal = InputError("method_not_allowed", ONLY_POST, status=405)
            await error_response(request, refusal, {"Allow": "POST"})(scope, receive, send)
            return
        try:
            _authenticate(request)
        except InputError as error:
            await error_response(request, error)(scope, receive, send)
            return
        manager = await self._started() if self.running else None
        if manager is None:  # between the lifespan's start and stop only, and once it started
            await unknown_response(request, "MCP is not running")(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    async def _started(self) -> StreamableHTTPSessionManager | None:
        if self._manager is not None:
            return self._manager
        async with self._starting:
            if self._manager is None and self._task is None and self.running:
                ready: asyncio.Future[StreamableHTTPSessionManager] = asyncio.Future()
                self._task = asyncio.create_task(self._run(ready))
                try:
                    self._manager = await ready
                except Exception:
                    logger.exception("MCP could not start")
        return self._manager

    async def _run(self, ready: asyncio.Future[StreamableHTTPSessionManager]) -> None:
        """Run the SDK's transport until the app stops (stateless: credentials are read from
        every request, so a session id is never a credential and nothing outlives a request)."""
        app = self._app
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            from api.mcp_server import build_server

            manager = StreamableHTTPSessionManager(
                build_server(lambda ctx, namespace: _client_for(app, ctx.request, namespace)),
                json_response=True,
                stateless=True,
                max_request_body_size=self._settings.verify_body_max_bytes + ENVELOPE_BYTES,
            )
            async with manager.run():
                ready.set_result(manager)
                await self._stopping.wait()
        except Exception as error:
            if not ready.done():
                ready.set_exception(error)
            raise

    async def stop(self) -> None:
        """End the transport, if a request started it."""
        self._stopping.set()
        if self._task is not None:
            try:
                await self._task
            except Exception:
                logger.exception("the MCP transport failed")
        self._manager, self._task = None, None


def _authenticate(request: Request) -> None:
    """Refuse a caller the API would refuse: a bad or unknown key, a malformed namespace, no
    credentials where the server requires them. Rate limits apply to each tool call."""
    tenancy = edge_of(request).tenancy
    headers = request.headers
    tenancy.resolve(headers.get("authorization"), headers.get("tenure-namespace"), None)


def _client_for(
    app: FastAPI, request: Any, namespace: str | None
) -> AbstractAsyncContextManager[AsyncClient]:
    """A client for one tool call: this app, in-process, as the caller of ``request`` (in the
    tool's ``namespace`` argument, if it gave one, instead of its header's)."""
    if not isinstance(request, Request):  # only streamable HTTP reaches this server
        raise TypeError("the /mcp server runs over HTTP only")
    authorization = request.headers.get("authorization")
    api_key = None if authorization is None else authorization.partition(" ")[2].strip()
    peer = request.client
    address = (peer.host, peer.port) if peer is not None else ("unknown", 0)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=address)
    namespace = namespace or request.headers.get("tenure-namespace")
    return AsyncClient(INTERNAL_URL, api_key, namespace, transport=transport, verify=False)
