"""``GET /api/v1/leases`` against a real server over a socket (docs/api.md, "List live
leases"): paging while leases come and go, on SQLite and on PostgreSQL; the filters; the
anonymous tenant's rule; the receipt checked offline; no owner token anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, lease, rid
from verify.cli import main as verify_provenance


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, fresh_server: Server) -> Server:
    """A server of the test's own, on a real SQLite folder or a real PostgreSQL database."""
    if request.param == "postgres":
        fresh_server.args = ["--database", str(request.getfixturevalue("postgres_url"))]
    return fresh_server.start()


@pytest.fixture
def tenant(server: Server) -> Iterator[httpx.Client]:
    """A client in a namespace of its own: a tenant whose every lease the test made."""
    with server.client() as api:
        namespace = api.post("/api/v1/namespaces", json={}).json()["data"]["namespace"]
    with server.client(**{"Tenure-Namespace": namespace}) as api:
        yield api


def acquire(api: httpx.Client, resource: str, holder: str = "w", **more: Any) -> dict[str, Any]:
    answer = lease(api, "acquire", resource=resource, holder=holder, ttlSeconds=300, **more)
    assert answer.status_code == 201, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def listed(api: httpx.Client, **query: Any) -> dict[str, Any]:
    answer = api.get("/api/v1/leases", params=query)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def every_page(api: httpx.Client, **query: Any) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        page = listed(api, **query, **({"cursor": cursor} if cursor else {}))
        items += page["leases"]
        if page["next"] is None:
            return items
        cursor = page["next"]


def test_pages_list_each_live_lease_once_while_leases_come_and_go(served: Server) -> None:
    with served.client() as api:
        namespace = api.post("/api/v1/namespaces", json={}).json()["data"]["namespace"]
    with served.client(**{"Tenure-Namespace": namespace}) as api:
        owners = {f"job:{i}": acquire(api, f"job:{i}")["ownerToken"] for i in range(30)}
        seen: list[str] = []
        released: set[str] = set()
        cursor, pages = None, 0
        while True:
            page = listed(api, limit=4, **({"cursor": cursor} if cursor else {}))
            assert page["count"] == len(page["leases"]) <= 4
            seen += [item["resource"] for item in page["leases"]]
            pages += 1
            unseen = sorted(set(owners) - set(seen) - released)
            if unseen:  # released before its page came: it must not be listed
                gone = unseen[0]
                lease(api, "release", resource=gone, ownerToken=owners[gone])
                released.add(gone)
            acquire(api, f"new:{pages}")  # granted between pages: listed or not, never twice
            if page["next"] is None:
                break
            cursor = page["next"]
    assert pages >= 6
    assert len(seen) == len(set(seen))  # no duplicates
    assert set(owners) - released <= set(seen)  # every lease live throughout was listed
    assert released and not released & set(seen)  # released before its page: not listed


def test_filters_by_prefix_scope_and_holder_with_a_semaphores_holders(
    tenant: httpx.Client, server: Server
) -> None:
    acquire(tenant, "deploy:prod", "ci", scope="release-42")
    acquire(tenant, "deploy:staging", "ci")
    acquire(tenant, "db:migrate", "ops", scope="release-42")
    for holder in ("a", "b"):
        acquire(tenant, "pool", holder, capacity=3)
    assert {i["resource"] for i in every_page(tenant, prefix="deploy:")} == {
        "deploy:prod",
        "deploy:staging",
    }
    assert {i["resource"] for i in every_page(tenant, scope="release-42")} == {
        "deploy:prod",
        "db:migrate",
    }
    assert {i["resource"] for i in every_page(tenant, holder="ci")} == {
        "deploy:prod",
        "deploy:staging",
    }
    (prod,) = every_page(tenant, prefix="deploy:p")
    assert (prod["holder"], prod["capacity"], prod["scope"]) == ("ci", 1, "release-42")
    assert prod["fencingToken"] == 1 and prod["expiresAt"].endswith("Z")
    (pool,) = every_page(tenant, prefix="pool")
    assert pool["capacity"] == 3 and "holder" not in pool
    assert [h["holder"] for h in pool["holders"]] == ["a", "b"]
    assert [h["holder"] for h in every_page(tenant, holder="b")[0]["holders"]] == ["b"]
    page = listed(tenant, prefix="deploy:", holder="ci", limit=5)
    assert (page["prefix"], page["holder"], page["limit"]) == ("deploy:", "ci", 5)
    with server.client() as anonymous:  # another tenant sees none of them
        secret = rid("anon")  # an unguessable prefix: the caller's own names under it
        acquire(anonymous, secret + "0a1b")
        acquire(anonymous, rid("anon"))
        found = every_page(anonymous, prefix=secret)
        assert [i["resource"] for i in found] == [secret + "0a1b"]


def test_the_anonymous_tenant_lists_only_under_an_unguessable_prefix_or_scope(
    api: httpx.Client,
) -> None:
    refused = api.get("/api/v1/leases", params={"holder": "w"})
    assert refused.status_code == 400, refused.text
    assert refused.json()["data"]["error"]["code"] == "low_entropy"
    assert refused.json()["data"]["error"]["field"] == "prefix"
    scope, mine = rid("scope"), rid("mine")
    acquire(api, mine, scope=scope)
    acquire(api, rid("other"))
    assert [i["resource"] for i in every_page(api, scope=scope)] == [mine]


def test_the_answer_is_a_receipt_that_verifies_offline_and_holds_no_owner_token(
    tenant: httpx.Client, tmp_path: Path
) -> None:
    granted = acquire(tenant, "report:daily")
    answer = tenant.get("/api/v1/leases", params={"prefix": "report:"})
    assert granted["ownerToken"] not in answer.text and "ownerToken" not in answer.text
    saved, keys = tmp_path / "list.json", tmp_path / "keys.json"
    saved.write_text(answer.text)
    keys.write_text(tenant.get("/api/v1/keys").text)
    assert verify_provenance([str(saved), "--keys", str(keys)]) == 0
    forged = json.loads(answer.text)
    forged["data"]["leases"][0]["holder"] = "mallory"
    saved.write_text(json.dumps(forged))
    assert verify_provenance([str(saved), "--keys", str(keys)]) == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": "AAA="}, "cursor"),
        ({"cursor": ""}, "cursor"),
        ({"cursor": "A" * 200}, "cursor"),
        ({"prefix": ""}, "prefix"),
        ({"holder": "h" * 129}, "holder"),
        ({"prefx": "deploy:"}, "prefx"),
        ([("limit", "2"), ("limit", "3")], "limit"),
    ],
)
def test_a_bad_query_is_a_signed_400_naming_the_parameter(
    tenant: httpx.Client, query: Any, field: str
) -> None:
    answer = tenant.get("/api/v1/leases", params=query)
    assert answer.status_code == 400, answer.text
    document = answer.json()
    assert document["data"]["error"]["field"] == field and "_provenance" in document
    assert document["data"]["status"] == "fail"


def test_a_lease_is_not_listed_once_it_expired_at_the_servers_clock(tmp_path: Path) -> None:
    """In-process with a fixed clock and no sweep between, so the lapsed lease's row is still
    stored: the listing itself leaves it out."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings

    now = [1_800_000_000_000]
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys", sweep_interval=3600)
    with TestClient(create_app(settings, clock=lambda: now[0])) as api:
        namespace = api.post("/api/v1/namespaces", json={}).json()["data"]["namespace"]
        api.headers["Tenure-Namespace"] = namespace
        for name, ttl in (("short", 5), ("long", 60)):
            body = {"resource": name, "holder": "w", "ttlSeconds": ttl}
            assert api.post("/api/v1/lease/acquire", json=body).status_code == 201
        names = [[i["resource"] for i in listed(api)["leases"]]]
        now[0] += 4_999
        names.append([i["resource"] for i in listed(api)["leases"]])
        now[0] += 1
        names.append([i["resource"] for i in listed(api)["leases"]])
    assert [sorted(found) for found in names] == [["long", "short"], ["long", "short"], ["long"]]
