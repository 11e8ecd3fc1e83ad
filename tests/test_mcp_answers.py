"""MCP tool errors say what to do: a fencingToken beyond 2^53 names the argument (it used to
end as a JSON-RPC internal error), and an unknown outcome names the requestId to retry with."""

from __future__ import annotations

import asyncio
import json
from contextlib import nullcontext
from typing import Any

import httpx
import pytest

from api.client import AsyncClient

mcp = pytest.importorskip("mcp")
from api.mcp_server import build_server  # noqa: E402

UNKNOWN = {"status": "unknown", "error": {"code": "storage_unavailable", "message": "disk"}}
TOO_BIG = 2**53 + 5


def _call(answer: httpx.Response, name: str, arguments: dict[str, Any]) -> tuple[Any, list[Any]]:
    """Call one tool in-process against a server that always answers ``answer``."""
    bodies: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content) if request.content else None)
        return answer

    async def run() -> Any:
        transport = httpx.MockTransport(handler)
        api = AsyncClient("http://tenure.test", transport=transport, verify=False)
        async with api, mcp.Client(build_server(lambda ctx, ns: nullcontext(api))) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(run()), bodies


@pytest.mark.parametrize("tool", ["lease_acquire", "lease_renew", "lease_release"])
def test_a_fencing_token_beyond_2_53_is_a_tool_error_naming_it(tool: str) -> None:
    arguments = {"resource": "r", "holder": "h", "ownerToken": "own_x", "fencingToken": TOO_BIG}
    if tool != "lease_acquire":
        del arguments["holder"]
    result, sent = _call(httpx.Response(503, json={"data": UNKNOWN}), tool, arguments)
    assert result.is_error and "fencingToken" in result.content[0].text
    assert "maximum" in result.content[0].text and sent == []  # refused before any call


@pytest.mark.parametrize("given", [None, "req_mine"])
def test_an_unknown_outcome_names_the_request_id_to_retry_with(given: str | None) -> None:
    arguments = {"resource": "r", "holder": "h"} | ({"requestId": given} if given else {})
    result, sent = _call(httpx.Response(503, json={"data": UNKNOWN}), "lease_acquire", arguments)
    text = result.content[0].text
    assert result.is_error and text.startswith("OUTCOME UNKNOWN")
    used = {body["requestId"] for body in sent}
    assert len(used) == 1 and len(sent) > 1  # every retry repeated it
    request_id = used.pop()
    assert given in (None, request_id) and repr(request_id) in text
