"""Strict input in tenure's words: one wording per rule, 415 for a body that is not
JSON by its Content-Type, duplicate keys refused, `complete` needs `result`."""

from __future__ import annotations

import httpx
import pytest

from api.client import Client
from tests.conftest import Server, lease, ledger_size, rid


def refusal(response: httpx.Response, status: int = 422) -> dict[str, str]:
    assert response.status_code == status, response.text
    data = response.json()["data"]
    assert data["status"] == "fail" and "_provenance" in response.json()
    error: dict[str, str] = data["error"]
    return error


def test_ttl_zero_and_over_the_cap_read_the_same(api: httpx.Client) -> None:
    zero = refusal(lease(api, "acquire", resource=rid(), holder="h", ttlSeconds=0))
    over = refusal(lease(api, "acquire", resource=rid(), holder="h", ttlSeconds=3601))
    assert (
        zero
        == over
        == {
            "code": "out_of_range",
            "message": "ttlSeconds must be an integer 1..3600",
            "field": "ttlSeconds",
        }
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"holder": "h"}, "resource is required"),
        ({"resource": rid(), "holder": "h", "capacity": 0}, "capacity must be an integer 1..1000"),
        ({"resource": "", "holder": "h"}, "resource must be a string of 1..256 characters"),
        ({"resource": rid(), "holder": "h" * 129}, "holder must be a string of 1..128 characters"),
        ({"resource": rid(), "holder": 7}, "holder must be a string"),
        ({"resource": rid(), "holder": "h", "ttlSeconds": "30"}, "ttlSeconds must be an integer"),
        ({"resource": rid(), "holder": "h\n"}, "holder must contain only printable characters"),
    ],
)
def test_messages_are_tenures_not_pydantics(
    api: httpx.Client, body: dict[str, object], message: str
) -> None:
    error = refusal(lease(api, "acquire", **body))
    assert error["message"] == message
    assert "Input should" not in error["message"]


def test_op_in_the_body_names_every_op(api: httpx.Client) -> None:
    error = refusal(api.post("/api/v1/lease", json={"op": "steal", "resource": rid()}))
    assert error["message"] == "op must be one of acquire, renew, release, get, wait, complete"


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_a_wrong_content_type_is_415_and_says_json_is_expected(
    api: httpx.Client, content_type: str
) -> None:
    body = b'{"resource": "%s", "holder": "h"}' % rid().encode()
    before = ledger_size(api)
    response = api.post(
        "/api/v1/lease/acquire", content=body, headers={"content-type": content_type}
    )
    error = refusal(response, 415)
    assert error["field"] == "Content-Type" and "application/json" in error["message"]
    assert ledger_size(api) == before


def test_json_content_types_and_none_are_accepted(api: httpx.Client) -> None:
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json", None):
        body = b'{"resource": "%s"}' % rid().encode()
        headers = {} if content_type is None else {"content-type": content_type}
        response = api.post("/api/v1/lease/get", content=body, headers=headers)
        assert response.status_code == 200, (content_type, response.text)


def test_a_body_that_is_not_json_says_json_is_expected(api: httpx.Client) -> None:
    response = api.post("/api/v1/lease/acquire", content=b"resource=x", headers={})
    assert "must be a JSON object" in refusal(response)["message"]


def test_duplicate_keys_are_refused(api: httpx.Client) -> None:
    r = rid()
    before = ledger_size(api)
    body = b'{"resource": "%s", "holder": "a", "holder": "b"}' % r.encode()
    error = refusal(api.post("/api/v1/lease/acquire", content=body))
    assert error["code"] == "duplicate_key" and error["field"] == "holder"
    nested = b'{"resource": "x", "result": {"k": 1, "k": 2}}'
    assert refusal(api.post("/api/v1/lease/complete", content=nested))["code"] == "duplicate_key"
    verify = api.post("/api/v1/verify-provenance", content=b'{"data": 1, "data": 2}')
    assert verify.status_code == 422 and verify.json()["data"]["error"]["field"] == "data"
    assert ledger_size(api) == before


def test_complete_needs_a_result_as_the_docs_say(api: httpx.Client) -> None:
    r = rid()
    token = lease(api, "acquire", resource=r, holder="h").json()["data"]["ownerToken"]
    error = refusal(lease(api, "complete", resource=r, ownerToken=token))
    assert error == {
        "code": "missing",
        "message": "result is required for complete",
        "field": "result",
    }
    done = lease(api, "complete", resource=r, ownerToken=token, result=None)
    assert done.status_code == 200 and done.json()["data"]["outcome"] == "COMPLETED"


def test_the_anonymous_tenant_refuses_a_guessable_scope_on_acquire(api: httpx.Client) -> None:
    before = ledger_size(api)
    error = refusal(lease(api, "acquire", resource=rid(), holder="h", scope="s"))
    assert error["code"] == "low_entropy" and error["field"] == "scope"
    assert ledger_size(api) == before
    good = lease(api, "acquire", resource=rid(), holder="h", scope=rid("scope"))
    assert good.status_code == 201


def test_the_anonymous_name_rule_states_its_length_and_holds_it(api: httpx.Client) -> None:
    long_name = "x" * 170 + rid()  # 206 characters, random enough, too long
    error = refusal(lease(api, "acquire", resource=long_name, holder="h"))
    assert error["code"] == "low_entropy" and "at most 200 characters" in error["message"]
    assert "distinct characters" in error["message"]
    scope = refusal(api.get("/api/v1/scopes/" + "s" * 129))
    assert scope["message"] == "scope must be a string of 1..128 characters"


def test_the_python_client_sends_a_null_result(server: Server) -> None:
    client = Client(server.url)
    r = rid()
    granted = client.acquire(r, holder="h")
    done = client.complete(r, granted.owner_token, None)
    assert done.data["outcome"] == "COMPLETED"
