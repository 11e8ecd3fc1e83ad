"""Hardening at the HTTP edge, against a real server: the verify endpoint never freezes the loop,
anonymous names carry 128 bits, hostile JSON and huge integers are 4xx naming the rule."""

from __future__ import annotations

import copy
import json
import secrets
import signal
import threading
import time
from typing import Any

import httpx
import pytest

from tests.conftest import Server, lease, rid

RULE_PARTS = ("128", "32 hex", "22 base64url", "distinct", "repeated", "ascending or descending")


def heavy_receipt(api: httpx.Client, extra: int) -> dict[str, Any]:
    """A real eddsa-rdfc-2022 receipt with `extra` made-up assertions: canonicalization work
    that grows far faster than the document."""
    saved = api.post(
        "/api/v1/lease/acquire",
        json={"resource": rid(), "holder": "w"},
        headers={"Accept-Provenance": "eddsa-rdfc-2022"},
    ).json()
    heavy = copy.deepcopy(saved)
    assertions = heavy["_provenance"]["credentialSubject"]["manifest"]["assertions"]
    assertions += [{"label": f"x.{i}", "hash": "A" * 43} for i in range(extra)]
    return heavy


def test_a_costly_verify_never_stalls_the_server(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        document = heavy_receipt(api, 500)
        answers: list[httpx.Response] = []
        worker = threading.Thread(
            target=lambda: answers.append(api.post("/api/v1/verify-provenance", json=document))
        )
        worker.start()
        time.sleep(0.2)  # let the verification start: this measures the server, not a clock rule
        slowest = 0.0
        for _ in range(10):
            started = time.monotonic()
            assert api.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - started)
        worker.join(timeout=60)
        assert slowest < 0.5, f"/healthz took {slowest:.2f} s during a verify"
        assert answers and answers[0].status_code == 200, answers
        report = answers[0].json()["data"]
        assert report["status"] == "fail", report
    # A verification still running never holds up SIGTERM (Server.stop waits 20 s at most).
    assert fresh_server.stop() in (0, -signal.SIGTERM)


@pytest.mark.parametrize(
    "name",
    [
        "my-company-deploy-production-server",
        "0123456789012345678901234567890123",
        "abcdefghijabcdefghijabcdefghijab",
        "job-" + "0f" * 16,
        "Q" * 40,
    ],
)
def test_guessable_anonymous_names_are_refused(api: httpx.Client, name: str) -> None:
    refused = lease(api, "acquire", resource=name, holder="w")
    assert refused.status_code == 422, refused.text
    error = refused.json()["data"]["error"]
    assert error["code"] == "low_entropy" and error["field"] == "resource"
    assert all(part in error["message"] for part in RULE_PARTS), error["message"]
    scope = api.get(f"/api/v1/scopes/{name}")
    assert scope.status_code == 422 and scope.json()["data"]["error"]["field"] == "scope"


def test_random_names_and_minted_namespaces_pass(api: httpx.Client) -> None:
    assert lease(api, "acquire", resource=rid(), holder="w").status_code == 201
    assert api.get(f"/api/v1/scopes/{rid('scope')}").status_code == 200
    minted = api.post("/api/v1/namespaces", json={}).json()["data"]["namespace"]
    body = {"resource": "deploy:prod", "holder": "w", "namespace": minted}
    assert lease(api, "acquire", **body).status_code == 201


@pytest.mark.parametrize("namespace", ["ns_" + " " * 43, "ns_" + "b" * 43, "ns_" + "A" * 42])
def test_namespaces_have_the_minted_format(api: httpx.Client, namespace: str) -> None:
    refused = lease(api, "acquire", resource="deploy:prod", holder="w", namespace=namespace)
    assert refused.status_code == 422, refused.text
    error = refused.json()["data"]["error"]
    assert error["field"] == "namespace" and "256 bits" in error["message"]


DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/lease/acquire",
        "/api/v1/lease",
        "/api/v1/namespaces",
        f"/api/v1/scopes/{rid('scope')}/release",
        f"/api/v1/scopes/{rid('scope')}/heartbeat",
        "/api/v1/verify-provenance",
    ],
)
def test_deep_nesting_is_refused_everywhere(api: httpx.Client, path: str) -> None:
    body = '{"resource": "r", "result": ' + DEEP + ', "data": {"a": ' + DEEP + "}}"
    refused = api.post(path, content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 422, refused.text
    error = refused.json()["data"]["error"]
    assert error["code"] == "too_deep" and "32" in error["message"]
    assert "_provenance" in refused.json()


def test_a_fencing_token_beyond_i_json_is_422_naming_it(api: httpx.Client) -> None:
    body = {"resource": rid(), "holder": "w", "fencingToken": 2**53 + 1, "requestId": "r-1"}
    refused = lease(api, "acquire", **body)
    assert refused.status_code == 422, refused.text
    error = refused.json()["data"]["error"]
    assert error["field"] == "fencingToken" and "2**53" in error["message"]


def test_a_huge_log_index_is_never_a_pass(api: httpx.Client) -> None:
    """Beyond I-JSON's integers the body is refused (422 naming the rule); ``true`` where an
    index belongs is a failed check."""
    saved = lease(api, "acquire", resource=rid(), holder="w").json()
    for index in (2**63, 2**64 + 5, True):
        forged = json.loads(json.dumps(saved))
        forged["data"]["ledger"]["logIndex"] = index
        answer = api.post("/api/v1/verify-provenance", json=forged)
        if index is True:
            assert answer.status_code == 200, answer.text
            assert answer.json()["data"]["status"] == "fail"
        else:
            assert answer.status_code == 422, answer.text
            assert "RFC 7493" in answer.json()["data"]["error"]["message"]


def test_free_tenants_are_limited_per_address_too(fresh_server: Server) -> None:
    """Minting a namespace per request must not sidestep the rate limit."""
    fresh_server.args = ["--rate-limit", "2"]
    fresh_server.start()
    with fresh_server.client() as api:
        statuses = []
        for _ in range(8):
            namespace = "ns_" + secrets.token_urlsafe(32)
            body = {"resource": "r", "holder": "w", "namespace": namespace}
            statuses.append(lease(api, "acquire", **body).status_code)
        assert 429 in statuses, statuses
        for path in ("/api/v1/log/checkpoint", "/api/v1/keys"):
            limited = [api.get(path).status_code for _ in range(8)]
            assert 429 in limited, (path, limited)
        verify = [api.post("/api/v1/verify-provenance", json={}).status_code for _ in range(8)]
        assert 429 in verify, verify
