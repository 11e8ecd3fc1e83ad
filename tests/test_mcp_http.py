"""MCP at /mcp inside a real `tenure serve` (decisions/0008), driven by the official `mcp` SDK's
own client over streamable HTTP: the tool list, every tool once, a refusal (HELD) as a tool
result, a bad argument as a tool error, authentication like the API's, tenants kept apart."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, rid
from tests.test_mcp import READ_ONLY, TOOLS, _every_tool, _refusal_and_bad_arguments, call
from tests.test_tenants_and_secrets import create_key

mcp = pytest.importorskip("mcp")
httpx2 = pytest.importorskip("httpx2")
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

Session = Callable[[Any], Awaitable[None]]


def _drive(url: str, session: Session, **headers: str) -> None:
    """Open an MCP session at `url` + /mcp with these HTTP headers and run `session` in it."""

    async def run() -> None:
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as h:
            transport = streamable_http_client(url + "/mcp", http_client=h)
            async with mcp.Client(transport) as client:
                await session(client)

    asyncio.run(run())


def test_every_tool_at_slash_mcp(server: Server) -> None:
    async def session(client: Any) -> None:
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.input_schema["additionalProperties"] is False
            assert tool.annotations.read_only_hint is (tool.name in READ_ONLY)
        await _every_tool(client)
        await _refusal_and_bad_arguments(client)

    before = _tree_size(server)
    _drive(server.url, session)
    # acquire, renew, release, wait, complete, and the refusal test's grant: in this ledger
    assert _tree_size(server) >= before + 6


def test_a_namespace_header_is_the_tenant(server: Server) -> None:
    namespace = httpx.post(server.url + "/api/v1/namespaces").json()["data"]["namespace"]

    async def session(client: Any) -> None:
        grant = await call(client, "lease_acquire", resource="deploy:prod", holder="ns-agent")
        assert grant["outcome"] == "GRANTED"  # a short name: legal in a tenant of one's own

    _drive(server.url, session, **{"Tenure-Namespace": namespace})
    with server.client(**{"Tenure-Namespace": namespace}) as api:
        held = api.post("/api/v1/lease/get", json={"resource": "deploy:prod"}).json()["data"]
        assert held["outcome"] == "HOLDING"


def test_refused_without_an_api_key_and_tenants_kept_apart(fresh_server: Server) -> None:
    fresh_server.args = ["--require-api-key"]
    fresh_server.start()  # `apikey create` needs an existing ledger; the server sees new keys
    key_a = create_key(fresh_server.data, "team-a")
    key_b = create_key(fresh_server.data, "team-b")
    _refused_at_the_door(fresh_server.url, key_a)
    taken: dict[str, Any] = {}

    async def as_a(client: Any) -> None:
        taken.update(await call(client, "lease_acquire", resource="deploy:prod", holder="a"))
        assert taken["outcome"] == "GRANTED"

    async def as_b(client: Any) -> None:
        stolen = {"resource": "deploy:prod", "ownerToken": taken["ownerToken"]}
        refused = await client.call_tool("lease_release", stolen)
        assert not refused.is_error  # a refusal to act on, not a protocol error
        assert refused.structured_content["data"]["outcome"] == "NOT_ACTIVE"
        mine = await call(client, "lease_acquire", resource="deploy:prod", holder="b")
        assert mine["outcome"] == "GRANTED" and mine["fencingToken"] == 1  # B's own resource

    async def a_still_holds(client: Any) -> None:
        held = await call(client, "lease_get", resource="deploy:prod")
        assert held["outcome"] == "HOLDING" and held["holders"][0]["holder"] == "a"

    _drive(fresh_server.url, as_a, Authorization=f"Bearer {key_a}")
    _drive(fresh_server.url, as_b, Authorization=f"Bearer {key_b}")
    _drive(fresh_server.url, a_still_holds, Authorization=f"Bearer {key_a}")


def _refused_at_the_door(url: str, good_key: str) -> None:
    """No key, or a wrong one: the API's own signed 401, before MCP reads a byte; the SDK's
    client cannot even initialize."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer tnr_nope"}, {"Authorization": "Basic x"}):
        answer = httpx.post(url + "/mcp", json=hello, headers={**accept, **headers})
        assert answer.status_code == 401, answer.text
        assert answer.json()["data"]["error"]["code"] == "unauthorized"
        assert answer.json()["_provenance"]["proof"]

    async def never(client: Any) -> None:
        raise AssertionError("an unauthenticated MCP session was opened")

    with pytest.raises(ExceptionGroup) as refused:  # the SDK raises from its task groups
        _drive(url, never)
    assert "MCPError" in _chain(refused.value), _chain(refused.value)
    lease = {"resource": rid(), "holder": "w"}
    granted = httpx.post(
        url + "/api/v1/lease/acquire", json=lease, headers={"Authorization": f"Bearer {good_key}"}
    )
    assert granted.status_code == 201  # the key the next sessions use does work


def _chain(error: BaseException) -> str:
    """Every message in an exception, its causes and (for groups) its members."""
    parts = [f"{type(error).__name__}: {error}"]
    for inner in (error.__cause__, error.__context__):
        if inner is not None:
            parts.append(_chain(inner))
    for member in getattr(error, "exceptions", ()):
        parts.append(_chain(member))
    return " | ".join(parts)


def _tree_size(server: Server) -> int:
    return int(httpx.get(server.url + "/healthz").json()["data"]["ledger"]["treeSize"])


def test_without_the_mcp_extra_serve_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings

    monkeypatch.setitem(sys.modules, "mcp", None)  # not installed
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    with TestClient(create_app(settings)) as api:
        assert api.get("/healthz").status_code == 200
        assert api.post("/mcp", json={}).status_code == 404


def test_a_key_and_a_namespace_at_once_is_refused_at_the_door(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    both = {"Authorization": "Bearer tnr_x", "Tenure-Namespace": "ns_" + "a" * 43}
    with TestClient(create_app(settings)) as api:
        answer = api.post("/mcp", json={}, headers=both)
        assert answer.status_code == 422
        assert answer.json()["data"]["error"]["code"] == "ambiguous_tenant"
        bad = api.post("/mcp", json={}, headers={"Tenure-Namespace": "ns_short"})
        assert bad.status_code == 422 and bad.json()["data"]["error"]["field"] == "namespace"


def test_each_tool_call_is_rate_limited_like_an_api_call(fresh_server: Server) -> None:
    fresh_server.args = ["--rate-limit", "1"]  # bursts of 2, then 1/s
    fresh_server.start()
    answers: list[Any] = []

    async def session(client: Any) -> None:
        for _ in range(4):  # well within a second
            answers.append(await client.call_tool("lease_get", {"resource": rid()}))

    _drive(fresh_server.url, session)
    limited = [a for a in answers if a.structured_content["data"].get("status") == "fail"]
    assert limited and not any(a.is_error for a in limited)  # a refusal to act on
    assert limited[0].structured_content["data"]["error"]["code"] == "rate_limited"
