"""Bad input gets a clear 4xx naming the problem, and appends nothing to the ledger."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import ledger_size, rid

R = rid()
OWNER = "own_" + "B" * 43
CASES: list[tuple[str, str, Any, int, str | None]] = [
    # (id, path, body, status, field named in the error)
    ("unknown field", "acquire", {"resource": R, "holder": "h", "colour": 1}, 422, "colour"),
    ("missing resource", "acquire", {"holder": "h"}, 422, "resource"),
    ("empty holder", "acquire", {"resource": R, "holder": ""}, 422, "holder"),
    ("resource and key", "acquire", {"resource": R, "key": R, "holder": "h"}, 422, "key"),
    ("missing owner", "renew", {"resource": R}, 422, "ownerToken"),
    (
        "ttl as string",
        "acquire",
        {"resource": R, "holder": "h", "ttlSeconds": "30"},
        422,
        "ttlSeconds",
    ),
    ("ttl zero", "acquire", {"resource": R, "holder": "h", "ttlSeconds": 0}, 422, "ttlSeconds"),
    (
        "ttl too long",
        "acquire",
        {"resource": R, "holder": "h", "ttlSeconds": 3601},
        422,
        "ttlSeconds",
    ),
    ("ttl float", "acquire", {"resource": R, "holder": "h", "ttlSeconds": 1.5}, 422, "ttlSeconds"),
    ("ttl bool", "acquire", {"resource": R, "holder": "h", "ttlSeconds": True}, 422, "ttlSeconds"),
    ("capacity 0", "acquire", {"resource": R, "holder": "h", "capacity": 0}, 422, "capacity"),
    ("capacity 1001", "acquire", {"resource": R, "holder": "h", "capacity": 1001}, 422, "capacity"),
    ("wait 61", "acquire", {"resource": R, "holder": "h", "waitSeconds": 61}, 422, "waitSeconds"),
    (
        "fencing 0",
        "renew",
        {"resource": R, "ownerToken": OWNER, "fencingToken": 0},
        422,
        "fencingToken",
    ),
    ("empty resource", "acquire", {"resource": "", "holder": "h"}, 422, "resource"),
    ("long resource", "acquire", {"resource": "r" * 257, "holder": "h"}, 422, "resource"),
    ("control char", "acquire", {"resource": R + "\n", "holder": "h"}, 422, "resource"),
    ("long holder", "acquire", {"resource": R, "holder": "h" * 129}, 422, "holder"),
    (
        "long requestId",
        "acquire",
        {"resource": R, "holder": "h", "requestId": "q" * 129},
        422,
        "requestId",
    ),
    (
        "result outside complete",
        "acquire",
        {"resource": R, "holder": "h", "result": 1},
        422,
        "result",
    ),
    (
        "guessable anonymous name",
        "acquire",
        {"resource": "deploy:prod", "holder": "h"},
        422,
        "resource",
    ),
    (
        "bad namespace",
        "acquire",
        {"resource": R, "holder": "h", "namespace": "ns_x"},
        422,
        "namespace",
    ),
    ("body is a list", "acquire", [1, 2], 422, None),
    ("unknown op in body", "", {"op": "steal", "resource": R}, 422, "op"),
    ("op contradicts path", "acquire", {"op": "release", "resource": R, "holder": "h"}, 422, "op"),
    ("unknown op in path", "steal", {"resource": R}, 422, "op"),
    (
        "large body",
        "acquire",
        {"resource": R, "holder": "h", "fingerprint": "x" * 17_000},
        413,
        None,
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "status", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused_and_records_nothing(
    api: httpx.Client, path: str, body: Any, status: int, field: str | None
) -> None:
    before = ledger_size(api)
    url = "/api/v1/lease" + (f"/{path}" if path else "")
    response = api.post(url, json=body)
    assert response.status_code == status, response.text
    data = response.json()["data"]
    assert data["status"] == "fail"
    assert data["error"]["message"]
    if field is not None:
        assert data["error"]["field"] == field
    assert ledger_size(api) == before


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"not json", b'{"resource": "x"', b"\xff\xfe"],
    ids=["empty", "brace", "text", "cut", "bytes"],
)
def test_malformed_json_is_422(api: httpx.Client, raw: bytes) -> None:
    response = api.post(
        "/api/v1/lease/acquire", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["data"]["status"] == "fail"


def test_oversize_complete_result_is_413(api: httpx.Client) -> None:
    r = rid()
    token = api.post("/api/v1/lease/acquire", json={"resource": r, "holder": "h"}).json()["data"][
        "ownerToken"
    ]
    before = ledger_size(api)
    big = {"resource": r, "ownerToken": token, "result": "x" * 33_000}
    assert api.post("/api/v1/lease/complete", json=big).status_code == 413
    huge = {"resource": r, "ownerToken": token, "result": "x" * 50_000}
    assert api.post("/api/v1/lease/complete", json=huge).status_code == 413
    assert ledger_size(api) == before
    fits = {"resource": r, "ownerToken": token, "result": "x" * 30_000}
    assert api.post("/api/v1/lease/complete", json=fits).status_code == 200


def test_declared_oversize_is_refused_before_the_body_is_read(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/lease/acquire",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": "2"},
    )
    assert response.status_code == 422
    chunks = (b"x" * 1024 for _ in range(100))
    streamed = api.post("/api/v1/lease/acquire", content=chunks)
    assert streamed.status_code == 413


def test_unknown_path_and_method_answer_in_the_api_shape(api: httpx.Client) -> None:
    missing = api.get("/api/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["data"]["error"]["code"] == "not_found"
    wrong = api.get("/api/v1/lease/acquire")
    assert wrong.status_code == 405
    assert wrong.json()["data"]["error"]["code"] == "method_not_allowed"
