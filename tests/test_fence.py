"""verify_fence on live answers of a real server: a store refuses a write whose fencing token is
not backed by a valid grant receipt for its resource, and says why."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from tests.conftest import lease, rid
from verify.errors import MalformedInput
from verify.fence import FenceRefused, verify_fence


def _grant(api: httpx.Client, resource: str) -> dict[str, Any]:
    answer = lease(api, "acquire", resource=resource, holder="w1", ttlSeconds=30).json()
    answer["data"].pop("ownerToken")  # a receipt as a worker saves it
    return dict(answer)


def _reason(receipt: Any, **options: Any) -> str:
    with pytest.raises(FenceRefused) as refused:
        verify_fence(receipt, **options)
    return refused.value.reason


def test_a_grant_proves_its_resource_and_token(api: httpx.Client) -> None:
    keys, resource = api.get("/api/v1/keys").json(), rid()
    receipt = _grant(api, resource)
    token = receipt["data"]["fencingToken"]
    fence = verify_fence(receipt, trust=keys, resource=resource, min_token=token)
    assert (fence.resource, fence.fencing_token, fence.holder) == (resource, token, "w1")
    bare = verify_fence(
        receipt["_provenance"], trust=keys["keys"][0]["did"], resource=resource, min_token=0
    )
    assert bare.fencing_token == token


def test_each_bad_receipt_is_refused_with_its_reason(api: httpx.Client) -> None:
    keys, resource = api.get("/api/v1/keys").json(), rid()
    receipt, other = _grant(api, resource), _grant(api, rid())
    token = receipt["data"]["fencingToken"]
    good = {"trust": keys, "resource": resource, "min_token": token}
    assert _reason(receipt, **{**good, "resource": rid()}) == "resource"
    assert _reason(receipt, **{**good, "min_token": token + 1}) == "token"
    wrong = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
    assert _reason(receipt, **{**good, "trust": wrong}) == "issuer"
    forged = copy.deepcopy(receipt)
    forged["data"]["fencingToken"] = token + 100
    forged["_provenance"]["credentialSubject"]["fencingToken"] = token + 100
    assert _reason(forged, **good) == "proof"
    swapped = copy.deepcopy(receipt)
    swapped["_provenance"]["proof"]["proofValue"] = other["_provenance"]["proof"]["proofValue"]
    assert _reason(swapped, **good) == "proof"
    seen = api.post("/api/v1/lease/get", json={"resource": resource}).json()
    assert seen["data"]["fencingToken"] == token
    assert _reason(seen, **{**good, "min_token": 0}) == "grant"


def test_a_retired_key_backs_no_fence(api: httpx.Client) -> None:
    keys, resource = api.get("/api/v1/keys").json(), rid()
    receipt = _grant(api, resource)
    retired = copy.deepcopy(keys)
    retired["keys"][0]["validUntil"] = retired["keys"][0]["validFrom"]
    assert _reason(receipt, trust=retired, resource=resource, min_token=0) == "issuer"


@pytest.mark.parametrize("trust", [[], {"keys": "x"}, ["https://example.com/key"]])
def test_trust_that_names_no_key_is_a_usage_error(trust: Any) -> None:
    with pytest.raises(MalformedInput):
        verify_fence({}, trust=trust, resource="r", min_token=0)


def test_a_receipt_as_text_is_read_strictly(api: httpx.Client) -> None:
    keys, resource = api.get("/api/v1/keys").json(), rid()
    receipt = _grant(api, resource)
    text = json.dumps(receipt, separators=(",", ":"))
    token = receipt["data"]["fencingToken"]
    assert verify_fence(text, trust=keys, resource=resource, min_token=0).fencing_token == token
    planted = text.replace('{"data":{', '{"data":{"fencingToken":999,', 1)
    assert _reason(planted, trust=keys, resource=resource, min_token=0) == "format"
    assert _reason(planted.encode(), trust=keys, resource=resource, min_token=0) == "format"
