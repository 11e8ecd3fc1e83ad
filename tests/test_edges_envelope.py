"""One envelope: every answer of the lease, namespace and scope endpoints is
`{data, _provenance}`, 404 and 405 included; query and path parameter errors are one 400."""

from __future__ import annotations

import httpx
import pytest

from verify.receipt import verify_receipt

SAFE = "an integer ≤ 9007199254740991"  # 2**53 - 1: I-JSON's integers, and no tree is larger


def signed_refusal(response: httpx.Response, status: int, code: str) -> dict[str, str]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"data", "_provenance"}, body
    assert body["data"]["status"] == "fail" and body["data"]["error"]["code"] == code
    error: dict[str, str] = body["data"]["error"]
    return error


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/api/v1/lease/acquire", 405, "method_not_allowed"),
        ("GET", "/api/v1/lease", 405, "method_not_allowed"),
        ("DELETE", "/api/v1/namespaces", 405, "method_not_allowed"),
        ("POST", "/api/v1/lease/acquire/more", 404, "not_found"),
        ("GET", "/api/v1/scopes/abc/nothing", 404, "not_found"),
        ("PUT", "/api/v1/scopes/abc/release", 405, "method_not_allowed"),
    ],
)
def test_404_and_405_on_lease_paths_are_signed_envelopes(
    api: httpx.Client, method: str, path: str, status: int, code: str
) -> None:
    response = api.request(method, path)
    error = signed_refusal(response, status, code)
    assert "Input should" not in error["message"] and error["message"]
    keys = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    verify_receipt(response.json(), frozenset(keys))


def test_elsewhere_404_keeps_the_plain_shape(api: httpx.Client) -> None:
    response = api.get("/api/v1/nothing-here")
    assert response.status_code == 404 and "_provenance" not in response.json()
    assert response.json()["data"]["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("path", "params", "field", "message"),
    [
        ("/api/v1/log/entries", {"start": -1}, "start", "start must be an integer ≥ 0"),
        ("/api/v1/log/entries", {"start": "x"}, "start", "start must be an integer"),
        ("/api/v1/log/proof/inclusion", {"index": 0}, "treeSize", "treeSize is required"),
        ("/api/v1/log/bundle/-1", {}, "index", "index must be an integer ≥ 0"),
        ("/api/v1/log/entries", {"start": 10**9}, "start", None),
        ("/api/v1/log/checkpoints", {"start": 2**63}, "start", f"start must be {SAFE}"),
        ("/api/v1/log/entries", {"start": 0, "end": 2**64}, "end", f"end must be {SAFE}"),
        ("/api/v1/log/checkpoints", {"limit": 0}, "limit", "limit must be an integer ≥ 1"),
        ("/api/v1/log/checkpoints", {"limit": 101}, "limit", "limit must be an integer ≤ 100"),
    ],
)
def test_query_parameter_errors_are_one_400_naming_the_parameter(
    api: httpx.Client, path: str, params: dict[str, object], field: str, message: str | None
) -> None:
    response = api.get(path, params=params)
    assert response.status_code == 400, response.text
    error = response.json()["data"]["error"]
    assert error["field"] == field
    if message is not None:
        assert error["message"] == message


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v1/scopes/s", None),
        ("POST", "/api/v1/scopes/s/release", {}),
        ("POST", "/api/v1/scopes/s/heartbeat", {"deadSeconds": 0}),
        ("POST", "/api/v1/namespaces", {}),
        ("POST", "/api/v1/verify-provenance", {}),
    ],
)
def test_a_bad_accept_provenance_is_refused_everywhere_it_is_declared(
    api: httpx.Client, method: str, path: str, body: object
) -> None:
    headers = {"Accept-Provenance": "eddsa-nothing"}
    response = api.request(method, path, json=body, headers=headers)
    assert signed_refusal(response, 422, "invalid_value")["field"] == "Accept-Provenance"
