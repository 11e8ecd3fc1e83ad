"""httpx transports that misbehave on purpose, over a real server: a network partition, a
dropped answer, a forged or swapped answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx


class Partition(httpx.HTTPTransport):
    """Every request fails with ConnectError while ``down``; otherwise a plain transport."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("partitioned by the test", request=request)
        return super().handle_request(request)


class Recorder(httpx.HTTPTransport):
    """Records every POST's body; ``fail(request, attempt)`` may raise before sending
    (``"before"``) or after the server answered (``"after"``: the answer is dropped)."""

    def __init__(self, fail: Callable[[dict[str, Any], int], str | None]) -> None:
        super().__init__()
        self.fail = fail
        self.bodies: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the keyring the client pins: not a call under test
            return super().handle_request(request)
        body = json.loads(request.content) if request.content else {}
        self.bodies.append(body)
        when = self.fail(body, len(self.bodies))
        if when == "before":
            raise httpx.ConnectError("refused by the test", request=request)
        response = super().handle_request(request)
        if when == "after":
            response.read()
            raise httpx.ReadError("answer dropped by the test", request=request)
        return response


class Rewriter(httpx.HTTPTransport):
    """Passes every answer through ``rewrite(document) -> document``."""

    def __init__(self, rewrite: Callable[[Any], Any]) -> None:
        super().__init__()
        self.rewrite = rewrite

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        document = self.rewrite(json.loads(response.read()))
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx.Response(response.status_code, headers=headers, json=document)


class AsyncPartition(httpx.AsyncHTTPTransport):
    """``Partition`` for ``AsyncClient``."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("partitioned by the test", request=request)
        return await super().handle_async_request(request)
