"""A client believes no answer that is not for its request, and no grant longer than it can
prove: a hostile local server replays a genuinely signed grant for another resource to the
Python client, `tenure lease run` and `tenure mcp`; a grant answered late is confirmed first."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.client import Client, InvalidRequest, LeaseLost, ReceiptInvalid, TenureError
from api.lease_run import EXIT_NOT_ACQUIRED
from tests.client_util import Rewriter
from tests.conftest import ROOT, Server, rid


@pytest.fixture
def hostile(server: Server) -> Iterator[str]:
    """A server on a real socket that serves the real keyring but answers every lease call
    with a real, signed grant — for another resource."""
    with httpx.Client(base_url=server.url) as api:
        keys = api.get("/api/v1/keys").content
        other = api.post("/api/v1/lease/acquire", json={"resource": rid("other"), "holder": "x"})
    grant = other.content

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send(200, keys)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self._send(201, grant)

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    fake = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{fake.server_address[1]}"
    fake.shutdown()
    fake.server_close()


def test_the_client_refuses_a_signed_grant_for_another_resource(hostile: str) -> None:
    with Client(hostile) as client, pytest.raises(ReceiptInvalid) as invalid:
        client.acquire(rid("mine"), "w1")  # no trust= given: the served keyring is pinned
    assert invalid.value.check == "manifest:tenure.request"


def test_without_receipts_the_resource_is_still_compared(server: Server) -> None:
    def elsewhere(document: Any) -> Any:
        document["data"]["resource"] = "deploy:elsewhere"
        return document

    unchecked = Client(server.url, transport=Rewriter(elsewhere), verify=False)
    with unchecked, pytest.raises(TenureError) as refused:
        unchecked.acquire(rid("mine"), "w1")
    assert "'deploy:elsewhere'" in str(refused.value) and "not believed" in str(refused.value)


def test_lease_run_does_not_run_the_command(hostile: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    cmd = [sys.executable, "-m", "api", "lease", "run", rid("mine"), "--url", hostile]
    done = subprocess.run(
        [*cmd, "--", "touch", str(ran)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == EXIT_NOT_ACQUIRED, done.stderr
    assert not ran.exists()
    assert "not acquired" in done.stderr and "Traceback" not in done.stderr


def test_tenure_mcp_answers_a_tool_error(hostile: str) -> None:
    mcp = pytest.importorskip("mcp")
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--url", hostile], cwd=ROOT
    )

    async def session() -> Any:
        async with mcp.Client(params) as client:
            return await client.call_tool("lease_acquire", {"resource": rid("m"), "holder": "a"})

    result = asyncio.run(session())
    assert result.is_error and "does not verify" in result.content[0].text
    assert "ownerToken" not in json.dumps(result.structured_content or {})


def test_a_grant_answered_late_is_confirmed_before_it_is_handed_out(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grant's answer takes 2.5 s (a fixed clock) of a 3 s ttl, and meanwhile the lease
    went to another holder: entering the block raises LeaseLost instead of handing out a
    fencing token that is no longer good."""
    clock = [0.0]
    monkeypatch.setattr("api.client.held.time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    resource, taken = rid("late"), []

    def delayed(document: Any) -> Any:
        data = document.get("data", {}) if isinstance(document, dict) else {}
        if data.get("outcome") == "GRANTED" and not taken:
            with httpx.Client(base_url=server.url) as rival:
                body = {"resource": resource, "ownerToken": data["ownerToken"]}
                rival.post("/api/v1/lease/release", json=body)  # as if it had expired
                again = {"resource": resource, "holder": "w2"}
                taken.append(rival.post("/api/v1/lease/acquire", json=again).json()["data"])
            clock[0] += 2.5
        return document

    entered: list[bool] = []
    with (
        Client(server.url, transport=Rewriter(delayed)) as client,
        pytest.raises(LeaseLost),
        client.lease(resource, "w1", ttl=3, wait=5) as lease,
    ):
        entered.append(lease.lost)  # the block must not run with a lease another holder has
    assert entered == []
    assert taken[0]["outcome"] == "GRANTED" and taken[0]["holder"] == "w2"


def test_a_fencing_token_beyond_2_53_is_refused_naming_the_field(server: Server) -> None:
    with Client(server.url) as client:
        grant = client.acquire(rid("big"), "w1")
        assert grant.owner_token is not None
        with pytest.raises(InvalidRequest) as refused:
            client.renew(grant.resource, grant.owner_token, fencing_token=2**53 + 5)
    assert refused.value.field == "fencingToken"
