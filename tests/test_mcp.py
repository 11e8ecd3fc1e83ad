"""`tenure mcp` driven by the official `mcp` SDK's own client over stdio, against a real server
(decisions/0008): the tool list, every tool once, a refusal, bad arguments; and the same server
built by `build_server` served as streamable HTTP, as `tenure serve` will mount it at /mcp."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest

from api.client import AsyncClient
from tests.conftest import ROOT, Server, free_port, rid
from tests.uvicorn_thread import serving

mcp = pytest.importorskip("mcp")
from mcp.client.stdio import StdioServerParameters  # noqa: E402

TOOLS = {
    "lease_acquire", "lease_renew", "lease_release", "lease_get", "lease_wait", "lease_complete",
    "scope_get", "scope_release", "scope_heartbeat", "namespace_create", "verify_provenance",
    "log_checkpoint", "watch_events",
}  # fmt: skip
READ_ONLY = {"lease_get", "scope_get", "verify_provenance", "log_checkpoint", "watch_events"}


def test_every_tool_over_stdio(server: Server) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--url", server.url], cwd=ROOT
    )
    asyncio.run(_session(params))


async def _session(params: StdioServerParameters) -> None:
    async with mcp.Client(params) as client:
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema is not None and tool.annotations is not None
            assert tool.annotations.read_only_hint is (tool.name in READ_ONLY)
        assert "fencingToken" in (listed[0].description or "")
        assert "unknown" in (listed[0].description or "")
        await _every_tool(client)
        await _refusal_and_bad_arguments(client)


async def call(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert set(result.structured_content) == {"data", "_provenance"}
    data: dict[str, Any] = result.structured_content["data"]
    return data


async def _every_tool(client: Any) -> None:
    resource, scope, done = rid("mcp"), rid("scope"), rid("done")
    grant = await call(client, "lease_acquire", resource=resource, holder="agent", scope=scope)
    assert grant["outcome"] == "GRANTED"
    owner = {"resource": resource, "ownerToken": grant["ownerToken"]}
    renewed = await call(client, "lease_renew", **owner, ttlSeconds=20)
    assert renewed["outcome"] == "RENEWED"
    assert (await call(client, "lease_get", resource=resource))["outcome"] == "HOLDING"
    assert (await call(client, "scope_get", scope=scope))["count"] == 1
    assert (await call(client, "scope_heartbeat", scope=scope, deadSeconds=60))["armed"]
    assert (await call(client, "lease_release", **owner))["outcome"] == "RELEASED"
    waited = await call(client, "lease_wait", resource=done, holder="agent", waitSeconds=1)
    result = await call(
        client, "lease_complete", resource=done, ownerToken=waited["ownerToken"], result={"ok": 1}
    )
    assert result["outcome"] == "COMPLETED"
    assert (await call(client, "scope_release", scope=scope))["releasedIds"] == []
    assert (await call(client, "namespace_create"))["namespace"].startswith("ns_")
    checkpoint = await call(client, "log_checkpoint")
    assert checkpoint["treeSize"] >= 5
    answer = await client.call_tool("lease_get", {"resource": resource})
    verdict = await call(client, "verify_provenance", document=answer.structured_content)
    assert verdict["status"] == "pass"


async def _refusal_and_bad_arguments(client: Any) -> None:
    resource = rid("taken")
    await call(client, "lease_acquire", resource=resource, holder="first")
    refused = await client.call_tool("lease_acquire", {"resource": resource, "holder": "second"})
    assert not refused.is_error  # a refusal is an answer to act on
    data = refused.structured_content["data"]
    assert data["outcome"] == "HELD" and data["heldBy"] == ["first"]
    assert data["retryAfterSeconds"] >= 1 and refused.structured_content["_provenance"]
    for arguments, named in (
        ({"resource": resource, "holder": "x", "ttlSeconds": 0}, "ttlSeconds"),
        ({"resource": resource, "holder": "x", "owner": "y"}, "owner"),
        ({"resource": resource, "key": resource, "holder": "x"}, "not both"),
        ({"holder": "x"}, "resource (or key) is required"),
        ({"resource": resource, "namespace": "ns_short"}, "namespace"),
        ({"resource": resource, "holder": "x", "waitSeconds": "5"}, "waitSeconds"),
    ):
        bad = await client.call_tool("lease_acquire", arguments)
        assert bad.is_error and named in bad.content[0].text, bad.content
    server_refused = await client.call_tool("lease_get", {"resource": "deploy:prod"})
    assert server_refused.is_error and "low_entropy" in server_refused.content[0].text


def test_the_same_server_over_streamable_http(server: Server) -> None:
    from api.mcp_server import build_server

    seen: list[Any] = []

    async def run() -> None:
        async with AsyncClient(server.url) as shared:

            def client_for(ctx: Any, namespace: str | None) -> nullcontext[AsyncClient]:
                seen.append(ctx.request)  # the HTTP request: where /mcp reads credentials
                return nullcontext(shared)

            with _uvicorn(build_server(client_for).streamable_http_app()) as port:
                async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:
                    assert len((await client.list_tools()).tools) == len(TOOLS)
                    grant = await call(client, "lease_acquire", resource=rid("http"), holder="h")
                    assert grant["outcome"] == "GRANTED"

    asyncio.run(run())
    assert seen and hasattr(seen[0], "headers")


@contextmanager
def _uvicorn(app: Any) -> Iterator[int]:
    """Serve an ASGI app on a free port in a thread for the block."""
    import uvicorn

    port = free_port()
    with serving(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"), 10):
        yield port
