"""The seeds' shapes at /mcp of a real server, through the official `mcp` client: `key` for
`resource`, no `holder`, and `namespace` as an argument for hosts that cannot set headers."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Server, rid
from tests.test_mcp import call
from tests.test_mcp_http import _drive

pytest.importorskip("mcp")


def test_key_and_no_holder_through_the_tools(server: Server) -> None:
    name = rid()

    async def session(client: Any) -> None:
        tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert tools["lease_acquire"]["required"] == []
        assert {"resource", "key", "namespace"} <= set(tools["lease_release"]["properties"])
        grant = await call(client, "lease_acquire", key=name)
        assert grant["outcome"] == "GRANTED" and grant["resource"] == name
        assert grant["holder"].startswith("holder_")
        got = await call(client, "lease_get", key=name)
        assert got["outcome"] == "HOLDING" and got["holder"] == grant["holder"]
        gone = await call(client, "lease_release", key=name, ownerToken=grant["ownerToken"])
        assert gone["outcome"] == "RELEASED"
        waited = await call(client, "lease_wait", key=rid(), waitSeconds=1)
        assert waited["outcome"] == "GRANTED"

    _drive(server.url, session)


def test_a_namespace_argument_is_the_tenant_and_is_never_logged(server: Server) -> None:
    namespace = httpx.post(server.url + "/api/v1/namespaces").json()["data"]["namespace"]
    scope = "nightly"  # short names: legal only in a tenant of one's own

    async def session(client: Any) -> None:
        ours = {"namespace": namespace}
        grant = await call(client, "lease_acquire", key="deploy:prod", scope=scope, **ours)
        assert grant["outcome"] == "GRANTED"
        packet = await call(client, "scope_get", scope=scope, **ours)
        assert [held["resource"] for held in packet["leases"]] == ["deploy:prod"]
        beat = await call(client, "scope_heartbeat", scope=scope, deadSeconds=60, **ours)
        assert beat["armed"] is True
        anonymous = await client.call_tool("lease_get", {"resource": "deploy:prod"})
        assert anonymous.is_error and "low_entropy" in anonymous.content[0].text

    _drive(server.url, session)
    seen = server.client(**{"Tenure-Namespace": namespace})
    got = seen.post("/api/v1/lease/get", json={"resource": "deploy:prod"}).json()["data"]
    assert got["outcome"] == "HOLDING"
    assert namespace not in server.log.read_text(errors="replace")
