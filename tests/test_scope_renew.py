"""A scope heartbeat with `"renew": true` renews every live lease of the scope in one call: one
renew entry per lease, so the ledger still audits clean; only the scope's own tenant reaches
its leases; bad input is refused naming the field and records nothing."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.client import AsyncClient, Client
from api.mcp_tools import TOOLS
from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, Limits
from ledger.writer.service import LeaseService
from tests import storage_util
from tests.conftest import ROOT, Server, lease, ledger_size, rid
from tests.names_key import NAMES
from verify.audit import audit, parse_lines

T0 = 1_800_000_000_000


def grant(api: httpx.Client, resource: str, **body: Any) -> dict[str, Any]:
    answer = lease(api, "acquire", resource=resource, holder=body.pop("holder", "w1"), **body)
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["data"])


def kinds_after(api: httpx.Client, start: int) -> list[str]:
    end = ledger_size(api)
    entries = api.get("/api/v1/log/entries", params={"start": start, "end": end}).json()
    return [json.loads(base64.b64decode(e["leaf"]))["kind"] for e in entries["entries"]]


def test_one_heartbeat_renews_every_live_lease_of_the_scope_and_the_ledger_audits_clean(
    fresh_server: Server, tmp_path: Path
) -> None:
    fresh_server.start()
    scope, other = rid("scope"), rid("scope")
    with fresh_server.client() as api:
        held = [grant(api, rid(), scope=scope, ttlSeconds=30) for _ in range(2)]
        sem = rid()
        held += [grant(api, sem, holder=h, scope=scope, capacity=2) for h in ("a", "b")]
        elsewhere = grant(api, rid(), scope=other, ttlSeconds=30)
        before = ledger_size(api)
        client = Client(fresh_server.url)
        beat = client.heartbeat(scope, 60, renew=True, ttl=600)  # its receipt verified
        renewed = {(r["resource"], r["fencingToken"]): r["expiresAt"] for r in beat.renewed}
        assert set(renewed) == {(h["resource"], h["fencingToken"]) for h in held}
        assert all(renewed[(h["resource"], h["fencingToken"])] > h["expiresAt"] for h in held)
        assert beat.data["armed"] and beat.ledger["treeSize"] == before + 4
        assert kinds_after(api, before) == ["renew"] * 4
        packet = client.scope(scope).leases  # the resume packet shows the new expiries
        assert {(p["resource"], p["expiresAt"]) for p in packet} == {
            (r, at) for (r, _), at in renewed.items()
        }
        untouched = lease(api, "get", resource=elsewhere["resource"]).json()["data"]
        assert untouched["expiresAt"] == elsewhere["expiresAt"]
        mine = lease(api, "renew", resource=held[0]["resource"], ownerToken=held[0]["ownerToken"])
        assert mine.status_code == 200  # still the owner's lease, same token
        client.close()
        assert api.get("/api/v1/log/checkpoint").status_code == 200  # signs the whole log
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    fresh_server.stop()
    out = tmp_path / "ledger.jsonl"
    cmd = [sys.executable, "-m", "api", "export", "--data", str(fresh_server.data)]
    exported = subprocess.run([*cmd, "--out", str(out)], cwd=ROOT, capture_output=True)
    assert exported.returncode == 0, exported.stderr
    with out.open("rb") as lines:
        report = audit(list(parse_lines(lines)), trusted_keys=dids)
    assert report.ok and not report.warnings, report


def test_another_tenant_renews_nothing_of_a_scope_of_the_same_name(server: Server) -> None:
    scope = rid("scope")
    with server.client() as api:
        held = grant(api, rid(), scope=scope, ttlSeconds=30)
        namespace = api.post("/api/v1/namespaces").json()["data"]["namespace"]
        before = ledger_size(api)
        body = {"deadSeconds": 0, "renew": True, "namespace": namespace}
        answer = api.post(f"/api/v1/scopes/{scope}/heartbeat", json=body)
        assert answer.status_code == 200 and answer.json()["data"]["renewed"] == []
        assert ledger_size(api) == before
        assert (
            lease(api, "get", resource=held["resource"]).json()["data"]["expiresAt"]
            == (held["expiresAt"])
        )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"deadSeconds": 30, "renew": "yes"}, "renew"),
        ({"deadSeconds": 30, "renew": 1}, "renew"),
        ({"deadSeconds": 30, "renew": True, "ttlSeconds": 0}, "ttlSeconds"),
        ({"deadSeconds": 30, "renew": True, "ttlSeconds": 3601}, "ttlSeconds"),
        ({"deadSeconds": 30, "renew": True, "ttlSeconds": "60"}, "ttlSeconds"),
        ({"deadSeconds": 30, "ttlSeconds": 60}, "ttlSeconds"),
        ({"renew": True}, "deadSeconds"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_renews_nothing(
    server: Server, body: dict[str, Any], field: str
) -> None:
    scope = rid("scope")
    with server.client() as api:
        held = grant(api, rid(), scope=scope)
        before = ledger_size(api)
        answer = api.post(f"/api/v1/scopes/{scope}/heartbeat", json=body)
        assert answer.status_code == 422, answer.text
        error = answer.json()["data"]["error"]
        assert error["field"] == field and field in error["message"], error
        assert "_provenance" in answer.json()
        assert ledger_size(api) == before
        now = lease(api, "get", resource=held["resource"]).json()["data"]
        assert now["expiresAt"] == held["expiresAt"]


location = storage_util.location  # the fixture, taken by name: every backend in turn


def test_renewed_leases_outlive_their_first_ttl_and_an_expired_one_is_not_revived(
    location: Path | str,
) -> None:
    """With a fixed clock, on both backends: a lease past its expiry at the heartbeat is
    recorded expired, not renewed; the renewed ones are still live after their first ttl."""

    async def scenario() -> None:
        now = [T0]
        storage = open_storage(location, names=NAMES)
        svc = LeaseService(storage, b"s" * 32, Limits(), lambda: now[0])
        await svc.start()
        try:
            for name, ttl in (("a", 10), ("b", 10), ("short", 2)):
                call = LeaseCall("acquire", "t", name, holder="w", scope="job", ttl_seconds=ttl)
                await svc.lease(call)
            now[0] += 5_000
            beat = await svc.heartbeat("t", "job", 0, 60)
            assert [r["resource"] for r in beat["renewed"]] == ["a", "b"]
            now[0] += 30_000  # past the first ttl of 10 s, inside the renewed 60 s
            svc.sweep(now[0])
            live = await svc.scope_leases("t", "job")
            assert sorted(x["resource"] for x in live) == ["a", "b"]
            kinds = [json.loads(leaf)["kind"] for _, leaf in storage.entries(0, 100)]
            assert kinds[:3] == ["acquire"] * 3
            assert sorted(kinds[3:]) == ["expire", "renew", "renew"]
        finally:
            await svc.stop()
            storage.close()

    asyncio.run(scenario())


def test_the_documented_heartbeat_renews_the_scope(server: Server) -> None:
    """The curl example of docs/api.md ("Scopes"), sent as written."""
    text = (ROOT / "docs" / "api.md").read_text()
    example = re.search(r"/heartbeat --json '(\{.*\})'", text)
    assert example is not None, "docs/api.md lost its heartbeat example"
    body = json.loads(example[1])
    scope = rid("scope")
    with server.client() as api:
        held = grant(api, rid(), scope=scope, ttlSeconds=30)
        answer = api.post(f"/api/v1/scopes/{scope}/heartbeat", json=body).json()["data"]
        (renewed,) = answer["renewed"]
        assert renewed["fencingToken"] == held["fencingToken"]
        assert renewed["expiresAt"] > held["expiresAt"] and answer["armed"]


def test_the_mcp_scope_heartbeat_renews_the_scope(server: Server) -> None:
    """The MCP tool takes `renew` and `ttlSeconds` as the HTTP body does."""
    (tool,) = [spec for spec in TOOLS if spec.name == "scope_heartbeat"]
    assert tool.input_schema["properties"]["renew"]["type"] == "boolean"
    assert "ttlSeconds" in tool.input_schema["properties"]
    scope = rid("scope")
    with server.client() as api:
        held = grant(api, rid(), scope=scope, ttlSeconds=30)

    async def beat() -> Any:
        async with AsyncClient(server.url) as client:
            arguments = {"scope": scope, "deadSeconds": 0, "renew": True, "ttlSeconds": 900}
            return await tool.call(client, arguments)

    (renewed,) = asyncio.run(beat()).data["renewed"]
    assert renewed["fencingToken"] == held["fencingToken"]
    assert renewed["expiresAt"] > held["expiresAt"]
