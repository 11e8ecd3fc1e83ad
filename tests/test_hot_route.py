"""The hot route (api/accel/hot_route.py) answers the lease routes as the FastAPI routes do.

Each request below goes to two apps on one fixed clock: the default one, whose ``HotRoute``
middleware answers the lease routes, and one with ``TENURE_ACCEL`` leaving it out, so FastAPI's
own routes (behind its middleware) answer. Status, ``Retry-After`` and ``data`` must agree (less
the values each ledger draws at random), and every answer's receipt must verify.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from starlette.middleware import Middleware

from api.accel import ACCELERATIONS
from api.accel.hot_route import HotRoute, lease_op_of
from api.app import create_app
from api.logs import AccessLog
from api.responses import request_path
from api.settings import Settings
from tests.conftest import rid
from tests.test_metrics import server_errors
from verify.dataintegrity import verify_proof

T0 = 1_800_000_000_000
RANDOM = frozenset({"ownerToken", "leaseId", "ledger", "witnesses", "backoff"})  # drawn per app


WITHOUT = ",".join(name for name in ACCELERATIONS if name != "hot-route")


def make_app(root: Path, fast: bool, access_log: bool = False) -> FastAPI:
    settings = Settings(
        data_dir=root / "data",
        keys_dir=root / "keys",
        sweep_interval=60,
        access_log=access_log,
        accel="all" if fast else WITHOUT,
    )
    return create_app(settings, lambda: T0)


@pytest.fixture
def clients(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    fast, slow = make_app(tmp_path / "fast", True), make_app(tmp_path / "slow", False)
    with (
        TestClient(fast, raise_server_exceptions=False) as a,
        TestClient(slow, raise_server_exceptions=False) as b,
    ):
        yield a, b


def requests() -> list[tuple[str, str, bytes, dict[str, str]]]:
    name, other = rid(), rid()
    body = json.dumps({"resource": name, "holder": "a", "ttlSeconds": 5}).encode()
    return [
        ("POST", "/api/v1/lease/acquire", body, {}),
        ("POST", "/api/v1/lease/acquire", body.replace(b'"a"', b'"b"'), {}),  # 409, Retry-After
        ("POST", "/api/v1/lease", json.dumps({"op": "get", "resource": name}).encode(), {}),
        ("POST", "/api/v1/lease", b"{}", {}),  # op missing
        ("POST", "/api/v1/lease/frobnicate", body, {}),
        ("POST", "/api/v1/lease/acquire", b"not json", {}),
        ("POST", "/api/v1/lease/acquire", json.dumps({"op": "release"}).encode(), {}),
        ("POST", "/api/v1/lease/acquire", body, {"Accept-Provenance": "rsa"}),
        ("POST", "/api/v1/lease/acquire", b'{"resource":"' + b"x" * 20_000 + b'"}', {}),
        ("POST", "/api/v1/lease/acquire", b'{"resource":"db","holder":"a"}', {}),  # low entropy
        ("POST", "/api/v1/lease/get", json.dumps({"resource": other}).encode(), {}),
        ("GET", "/api/v1/lease/acquire", b"", {}),  # passed on: 405
        ("POST", "/api/v1/lease/acquire/more", body, {}),  # passed on: 404
        ("POST", "/api/v1/lease/", body, {}),  # passed on
    ]


def comparable(answer: Any) -> tuple[int, str | None, Any]:
    document = answer.json()
    if "_provenance" in document:
        assert verify_proof(document["_provenance"]).verified
    data = document.get("data")
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in RANDOM}
    return answer.status_code, answer.headers.get("retry-after"), data


def test_the_fast_path_answers_as_the_fastapi_routes(
    clients: tuple[TestClient, TestClient],
) -> None:
    fast, slow = clients
    for method, path, body, headers in requests():
        a = fast.request(method, path, content=body, headers=headers)
        b = slow.request(method, path, content=body, headers=headers)
        assert comparable(a) == comparable(b), (method, path, a.text)


def test_an_unhandled_error_is_answered_and_signed_the_same(
    clients: tuple[TestClient, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    for client in clients:
        service = client.app.state.edge.service  # type: ignore[attr-defined]

        async def broken(call: Any) -> Any:
            raise RuntimeError("boom")

        for name in ("lease", "lease_early"):  # the route's calls, waiting or not
            monkeypatch.setattr(service, name, broken)
    body = json.dumps({"resource": rid(), "holder": "a"}).encode()
    fast, slow = (c.post("/api/v1/lease/acquire", content=body) for c in clients)
    assert fast.status_code == 500 and comparable(fast) == comparable(slow)


def test_the_lease_routes_are_answered_without_fastapi_routing(tmp_path: Path) -> None:
    """Fails where FastAPI's router still answers them: its lease routes are removed here."""
    app = make_app(tmp_path, True)
    app.router.routes = [r for r in app.router.routes if "/api/v1/lease" not in str(r)]
    with TestClient(app) as client:
        body = {"resource": rid(), "holder": "a"}
        assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
        assert client.post("/api/v1/lease", json={"op": "get", **body}).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "root", "expected"),
    [
        ("POST", "/api/v1/lease", "", (True, None)),
        ("POST", "/api/v1/lease/acquire", "", (True, "acquire")),
        ("POST", "/api/v1/lease/anything", "", (True, "anything")),
        ("POST", "/api/v1/lease/", "", (False, None)),
        ("POST", "/api/v1/lease/a/b", "", (False, None)),
        ("POST", "/api/v1/leases", "", (False, None)),
        ("GET", "/api/v1/lease/acquire", "", (False, None)),
        ("POST", "/api/v1/lease/acquire", "/behind-a-proxy", (False, None)),
    ],
)
def test_which_requests_take_the_fast_path(
    method: str, path: str, root: str, expected: tuple[bool, str | None]
) -> None:
    scope = {"type": "http", "method": method, "path": path, "root_path": root}
    assert lease_op_of(scope) == expected


@pytest.mark.parametrize(
    "path", ["/api/v1/lease/acquire", "/api/v1/lease/a?b", "/x#y", "/a\\b", "/%41 é/ü", "//x"]
)
def test_the_signed_path_is_starlettes_url_path(path: str) -> None:
    """``request_path`` skips building the URL; it must name what ``request.url.path`` did."""
    headers = [(b"host", b"127.0.0.1:8000")]
    request = Request({"type": "http", "path": path, "headers": headers, "query_string": b"q"})
    assert request_path(request) == request.url.path


def test_the_lease_routes_are_answered_in_front_of_the_other_middleware(tmp_path: Path) -> None:
    """Fails where a lease request still reaches the request metrics or exception middleware:
    every middleware the app added but the hot route is replaced by one that refuses."""
    app = make_app(tmp_path, True)

    def refusing(inner: Any) -> Any:
        async def refuse(scope: Any, receive: Any, send: Any) -> None:
            assert scope["type"] == "lifespan", f"{scope['path']} went past the hot route"
            await inner(scope, receive, send)

        return refuse

    app.user_middleware = [m for m in app.user_middleware if m.cls is HotRoute]
    app.user_middleware.append(Middleware(refusing))
    with TestClient(app) as client:
        body = {"resource": rid(), "holder": "a"}
        assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
        assert client.post("/api/v1/lease", json={"op": "get", **body}).status_code == 200


def test_without_the_switch_the_app_has_no_hot_route(tmp_path: Path) -> None:
    assert any(m.cls is HotRoute for m in make_app(tmp_path / "a", True).user_middleware)
    assert not any(m.cls is HotRoute for m in make_app(tmp_path / "b", False).user_middleware)


@pytest.mark.parametrize("fast", [True, False])
def test_a_crash_is_raised_counted_and_logged_as_the_middleware_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """The server sees the exception (it logs it), the client a signed 500, the metrics a 5xx
    of the route template and the access log a 500 line — with and without the front."""
    app = make_app(tmp_path, fast, access_log=True)
    lines: list[tuple[str, int]] = []
    monkeypatch.setattr(
        AccessLog, "request", lambda log, scope, status: lines.append((scope["path"], status))
    )
    route = "/api/v1/lease/{op}"
    with TestClient(app, raise_server_exceptions=False) as client:

        async def broken(call: Any) -> Any:
            raise RuntimeError("boom")

        for name in ("lease", "lease_early"):
            monkeypatch.setattr(app.state.edge.service, name, broken)
        before = server_errors(client, route, "500")
        body = json.dumps({"resource": rid(), "holder": "a"}).encode()
        answer = client.post("/api/v1/lease/acquire", content=body)
        assert answer.status_code == 500 and comparable(answer)[2]["status"] == "unknown"
        assert server_errors(client, route, "500") == before + 1
    assert ("/api/v1/lease/acquire", 500) in lines
    with TestClient(app, raise_server_exceptions=True) as client:
        for name in ("lease", "lease_early"):
            monkeypatch.setattr(app.state.edge.service, name, broken)
        with pytest.raises(RuntimeError, match="boom"):
            client.post("/api/v1/lease/acquire", content=body)
