"""``client.list_leases`` / ``lease_pages`` (sync and async) and the docs' listing examples,
against a real server: docs/client.md's Python example and docs/api.md's curl line, as written."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from typing import Any

import httpx
import pytest

from api.client import AsyncClient, Client, MismatchedAnswer, Unavailable
from tests.client_util import Rewriter
from tests.conftest import ROOT, Server


def section(path: str, heading: str, fence: str) -> str:
    """The first block opening with ``fence`` after ``heading`` in a doc."""
    text = (ROOT / path).read_text()
    start = text.index(fence, text.index(heading)) + len(fence)
    return text[start : text.index("\n```" if fence.startswith("```") else "\n\n", start)]


@pytest.fixture
def namespace(server: Server) -> str:
    with Client(server.url) as client:
        return client.create_namespace().namespace


def grant(client: Client, *names: str, **more: Any) -> None:
    for name in names:
        client.acquire(name, "ci", ttl=300, **more)


def test_the_client_docs_example_lists_every_page(server: Server, namespace: str) -> None:
    with Client(server.url, namespace=namespace) as client:
        grant(client, *(f"deploy:{i}" for i in range(7)), "build:1")
        grant(client, "deploy:pool", capacity=2)
    example = section("docs/client.md", "### Listing your live leases", "```python\n")
    scope: dict[str, Any] = {"URL": server.url, "NAMESPACE": namespace}
    exec(example.replace("limit=50", "limit=3"), scope)  # three pages and more
    assert sorted(scope["held"]) == sorted([f"deploy:{i}" for i in range(7)] + ["deploy:pool"])
    assert scope["held"]["deploy:pool"] == [("ci", 1)]
    assert scope["receipt"]["_provenance"]["proof"]["proofValue"]


def test_async_pages_match_the_sync_ones(server: Server, namespace: str) -> None:
    with Client(server.url, namespace=namespace) as client:
        grant(client, *(f"job:{i}" for i in range(5)))
        pages = list(client.lease_pages("job:", limit=2))
        single = client.list_leases("job:", limit=2)

    async def walk() -> list[list[str]]:
        async with AsyncClient(server.url, namespace=namespace) as client:
            return [
                [i["resource"] for i in p.leases] async for p in client.lease_pages("job:", limit=2)
            ]

    assert [[i["resource"] for i in p.leases] for p in pages] == asyncio.run(walk())
    assert len(pages) >= 3 and pages[-1].next is None
    assert single.leases == pages[0].leases and single.next == pages[0].next


def test_a_page_for_another_query_is_not_believed(server: Server, namespace: str) -> None:
    def other_prefix(document: Any) -> Any:
        if isinstance(document, dict) and "leases" in document.get("data", {}):
            document["data"]["prefix"] = "other:"  # the signature breaks too; either refuses
        return document

    transport = Rewriter(other_prefix)
    client = Client(server.url, namespace=namespace, transport=transport, verify=False)
    with client, pytest.raises(Unavailable) as unknown:
        client.list_leases("deploy:")
    assert isinstance(unknown.value.__cause__, MismatchedAnswer)  # retried, never believed


def test_the_api_docs_curl_example_answers_a_signed_page(server: Server, namespace: str) -> None:
    with Client(server.url, namespace=namespace) as client:
        grant(client, "deploy:a", "deploy:b", "deploy:c")
    line = section("docs/api.md", "## List live leases", "    curl").strip()
    command = "curl " + line.replace("localhost:8080", server.url.removeprefix("http://"))
    env = os.environ | {"NS": namespace}
    out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, check=True)
    document = json.loads(out.stdout)
    assert document["data"]["count"] == 2 and document["data"]["next"]
    assert {i["resource"] for i in document["data"]["leases"]} <= {
        "deploy:a",
        "deploy:b",
        "deploy:c",
    }
    checked = httpx.post(server.url + "/api/v1/verify-provenance", json=document).json()
    assert checked["data"]["status"] == "pass", checked
