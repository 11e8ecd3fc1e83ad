"""The seeds' shapes a real server accepts (docs/api.md "Seed shapes"): `key` for `resource`,
no `holder`, and a throttled tenant's heartbeats and replays let through."""

from __future__ import annotations

import hashlib
import json
from base64 import urlsafe_b64encode
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, lease, ledger_size, rid


def _verified(api: httpx.Client, answer: httpx.Response) -> dict[str, Any]:
    """The answer's data, once the server's verifier passed its receipt."""
    verdict = api.post("/api/v1/verify-provenance", json=answer.json()).json()["data"]
    assert verdict["status"] == "pass", verdict
    data: dict[str, Any] = answer.json()["data"]
    return data


def test_the_docs_example_is_granted(api: httpx.Client) -> None:
    section = (ROOT / "docs" / "api.md").read_text().split("## Seed shapes")[1]
    body = json.loads(section.split("```json")[1].split("```")[0])
    namespace = api.post("/api/v1/namespaces").json()["data"]["namespace"]
    sent = api.post("/api/v1/lease/acquire", json=body, headers={"Tenure-Namespace": namespace})
    assert sent.status_code == 201, sent.text
    data = _verified(api, sent)
    assert data["resource"] == body["key"] and data["holder"].startswith("holder_")


def test_key_names_the_resource_in_every_op_and_receipts_say_resource(api: httpx.Client) -> None:
    r = rid()
    granted = lease(api, "acquire", key=r, holder="w", requestId=rid("req"))
    assert granted.status_code == 201, granted.text
    data = _verified(api, granted)
    assert data["resource"] == r and "key" not in data
    token = data["ownerToken"]
    assert lease(api, "get", key=r).json()["data"]["holder"] == "w"
    assert lease(api, "renew", key=r, ownerToken=token).json()["data"]["outcome"] == "RENEWED"
    done = lease(api, "complete", key=r, ownerToken=token, result={"ok": True})
    assert _verified(api, done)["outcome"] == "COMPLETED"
    waited = lease(api, "wait", key=rid(), holder="w", waitSeconds=1)
    assert waited.status_code == 201 and waited.json()["data"]["outcome"] == "GRANTED"
    other = rid()
    token = lease(api, "acquire", key=other).json()["data"]["ownerToken"]
    released = lease(api, "release", key=other, ownerToken=token)
    assert _verified(api, released)["outcome"] == "RELEASED"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"resource": "R", "key": "R"}, "resource and key name the same field"),
        ({"resource": "R", "key": "S"}, "give one, not both"),
        ({"key": ""}, "key must be a string of 1..256 characters"),
        ({"key": "k" * 257}, "key must be a string of 1..256 characters"),
        ({"key": 7}, "key must be a string"),
    ],
)
def test_a_bad_key_is_refused_naming_it_and_records_nothing(
    api: httpx.Client, body: dict[str, Any], message: str
) -> None:
    named = {k: rid() if v in ("R", "S") else v for k, v in body.items()}
    before = ledger_size(api)
    refused = lease(api, "acquire", holder="w", **named)
    assert refused.status_code == 422, refused.text
    error = refused.json()["data"]["error"]
    assert error["field"] == "key" and message in error["message"]
    assert ledger_size(api) == before


def test_no_holder_gets_a_label_that_reveals_nothing(api: httpx.Client) -> None:
    r = rid()
    first = lease(api, "acquire", resource=r, capacity=2)
    second = lease(api, "acquire", resource=r, capacity=2)
    assert (first.status_code, second.status_code) == (201, 201), second.text
    a, b = _verified(api, first), _verified(api, second)
    assert a["holder"].startswith("holder_") and b["holder"].startswith("holder_")
    assert a["holder"] != b["holder"]  # two holderless callers never share a label (rule 4)
    for data in (a, b):
        token = data["ownerToken"]
        plain = urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).decode()
        assert token[4:20] not in data["holder"] and plain[:16] not in data["holder"]
    held = lease(api, "acquire", resource=r, capacity=2).json()["data"]
    assert held["outcome"] == "HELD" and sorted(held["heldBy"]) == sorted(
        [a["holder"], b["holder"]]
    )
    renewed = lease(api, "renew", resource=r, ownerToken=a["ownerToken"]).json()["data"]
    assert renewed["outcome"] == "RENEWED" and renewed["holder"] == a["holder"]


def test_a_holderless_retry_replays_the_same_grant(api: httpx.Client) -> None:
    body = {"resource": rid(), "requestId": rid("req")}
    first = lease(api, "acquire", **body).json()["data"]
    again = lease(api, "acquire", **body).json()["data"]
    assert again["replayed"] is True and again["holder"] == first["holder"]
    assert again["ownerToken"] == first["ownerToken"]


@pytest.mark.parametrize("holder", ["", "h" * 129, "h\n", 7])
def test_a_bad_holder_is_still_refused(api: httpx.Client, holder: Any) -> None:
    refused = lease(api, "acquire", resource=rid(), holder=holder)
    assert refused.status_code == 422 and refused.json()["data"]["error"]["field"] == "holder"


def _throttled(api: httpx.Client) -> None:
    """Spend the tenant's allowance until it answers 429."""
    for _ in range(20):
        if lease(api, "get", resource=rid()).status_code == 429:
            return
    raise AssertionError("the rate limit never applied")


def test_a_throttled_tenant_still_heartbeats_and_replays(fresh_server: Server) -> None:
    fresh_server.args = ["--rate-limit", "1"]
    fresh_server.start()
    with fresh_server.client() as api:
        scope = rid("scope")
        body = {"resource": rid(), "holder": "w", "requestId": rid("req"), "scope": scope}
        granted = lease(api, "acquire", **body)
        assert granted.status_code == 201, granted.text
        _throttled(api)
        replay = lease(api, "acquire", **body)
        assert replay.status_code == 200, replay.text
        assert replay.json()["data"]["replayed"] is True
        assert replay.json()["data"]["ownerToken"] == granted.json()["data"]["ownerToken"]
        _throttled(api)
        beat = api.post(f"/api/v1/scopes/{scope}/heartbeat", json={"deadSeconds": 30})
        assert beat.status_code == 200 and beat.json()["data"]["armed"] is True, beat.text
        _throttled(api)
        other = lease(api, "acquire", **body | {"holder": "v"})  # same requestId, other input
        assert other.status_code == 429 and other.headers["Retry-After"]
