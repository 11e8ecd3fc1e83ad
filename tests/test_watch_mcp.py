"""The MCP tool ``watch_events`` inside a real `tenure serve`, driven by the official `mcp` SDK's
client over streamable HTTP: the caller's tenant's latest events since an index, bounded by
``limit``, continued from ``next``, signed like every tool answer; another tenant's unseen."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Server
from tests.watch_util import lease_call, namespace

mcp = pytest.importorskip("mcp")
pytest.importorskip("httpx2")
from tests.test_mcp import call  # noqa: E402
from tests.test_mcp_http import _drive  # noqa: E402


def test_watch_events_tool_pages_the_tenants_events(server: Server) -> None:
    ns, other = namespace(server), namespace(server)
    grant = lease_call(server, ns, "acquire", resource="mcp:job", holder="agent")
    lease_call(server, other, "acquire", resource="mcp:job", holder="them")
    lease_call(server, ns, "release", resource="mcp:job", ownerToken=grant["ownerToken"])
    start = grant["ledger"]["logIndex"]
    pages: list[dict[str, Any]] = []

    async def session(client: Any) -> None:
        pages.append(await call(client, "watch_events", fromIndex=start, limit=1))
        pages.append(await call(client, "watch_events", fromIndex=pages[0]["next"], limit=5))
        refused = await client.call_tool("watch_events", {"limit": 101})
        assert refused.is_error  # past the bound: refused before any call

    _drive(server.url, session, **{"Tenure-Namespace": ns})
    first, rest = pages
    assert [(e["op"], e["resource"]) for e in first["events"]] == [("grant", "mcp:job")]
    assert first["events"][0]["ledger"]["logIndex"] == start
    assert [(e["op"], e["resource"]) for e in rest["events"]] == [("release", "mcp:job")]
    assert rest["events"][0]["fencingToken"] == grant["fencingToken"]


def test_watch_events_tool_needs_a_tenant_of_ones_own(server: Server) -> None:
    async def session(client: Any) -> None:
        result = await client.call_tool("watch_events", {"fromIndex": 0})
        assert result.is_error or result.structured_content["data"]["status"] == "fail"

    _drive(server.url, session)
    assert httpx.get(server.url + "/api/v1/watch/events").status_code == 403
