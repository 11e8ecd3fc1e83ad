"""Each lease rule of DESIGN §2 as a user meets it: a real server over a real socket."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import Server, lease, ledger_size, rid


def acquire(api: httpx.Client, resource: str, holder: str = "w1", **body: object) -> httpx.Response:
    return lease(api, "acquire", resource=resource, holder=holder, **body)


def test_grant_then_refusal_names_holder_with_retry_after(api: httpx.Client) -> None:
    r = rid()
    first = acquire(api, r, ttlSeconds=20)
    assert first.status_code == 201
    data = first.json()["data"]
    assert data["outcome"] == "GRANTED" and data["granted"] is True and data["status"] == "pass"
    assert data["fencingToken"] == 1 and data["ownerToken"].startswith("own_")
    assert len(data["ownerToken"]) == 4 + 43
    refused = acquire(api, r, "w2")
    assert refused.status_code == 409
    body = refused.json()["data"]
    assert body["outcome"] == "HELD" and body["heldBy"] == ["w1"] and body["status"] == "fail"
    assert body["expiresAt"] == data["expiresAt"]
    assert 1 <= int(refused.headers["Retry-After"]) == body["retryAfterSeconds"] <= 20
    assert body["backoff"]["waitMs"] >= (body["retryAfterSeconds"] - 1) * 1000
    assert "ownerToken" not in body


def test_renew_keeps_token_and_stale_owner_is_lost(api: httpx.Client) -> None:
    r = rid()
    granted = acquire(api, r, ttlSeconds=5).json()["data"]
    renewed = lease(api, "renew", resource=r, ownerToken=granted["ownerToken"], ttlSeconds=60)
    assert renewed.status_code == 200
    assert renewed.json()["data"]["outcome"] == "RENEWED"
    assert renewed.json()["data"]["fencingToken"] == granted["fencingToken"]
    assert renewed.json()["data"]["expiresAt"] > granted["expiresAt"]
    wrong = lease(api, "renew", resource=r, ownerToken="own_" + "A" * 43)
    assert wrong.status_code == 409 and wrong.json()["data"]["outcome"] == "LOST"
    mismatch = lease(api, "renew", resource=r, ownerToken=granted["ownerToken"], fencingToken=9)
    assert mismatch.json()["data"]["outcome"] == "LOST"


def test_release_frees_at_once_and_second_release_is_not_active(api: httpx.Client) -> None:
    r = rid()
    granted = acquire(api, r).json()["data"]
    released = lease(api, "release", resource=r, ownerToken=granted["ownerToken"])
    assert released.status_code == 200
    assert released.json()["data"]["outcome"] == "RELEASED"
    size = ledger_size(api)
    again = lease(api, "release", resource=r, ownerToken=granted["ownerToken"])
    assert again.status_code == 409 and again.json()["data"]["outcome"] == "NOT_ACTIVE"
    assert ledger_size(api) == size
    successor = acquire(api, r, "w2")
    assert successor.status_code == 201 and successor.json()["data"]["fencingToken"] == 2


def test_reacquire_with_owner_token_renews_but_label_alone_is_refused(api: httpx.Client) -> None:
    r = rid()
    granted = acquire(api, r).json()["data"]
    again = acquire(api, r, ownerToken=granted["ownerToken"])
    assert again.status_code == 200
    assert again.json()["data"]["outcome"] == "RENEWED"
    assert again.json()["data"]["fencingToken"] == granted["fencingToken"]
    assert "ownerToken" not in again.json()["data"]
    label = acquire(api, r)
    assert label.status_code == 409
    assert label.json()["data"]["sameHolderLabel"] is True


def test_expired_lease_is_taken_back_by_the_sweeper(api: httpx.Client) -> None:
    r = rid()
    granted = acquire(api, r, ttlSeconds=1).json()["data"]
    size = ledger_size(api)
    time.sleep(1.6)
    assert ledger_size(api) == size + 1  # the expire event, recorded with no call touching it
    got = lease(api, "get", resource=r).json()["data"]
    assert got["outcome"] == "FREE" and got["granted"] is False
    late = lease(api, "renew", resource=r, ownerToken=granted["ownerToken"])
    assert late.json()["data"]["outcome"] == "LOST"


def test_semaphore_capacity_and_capacity_conflict(api: httpx.Client) -> None:
    r = rid()
    tokens = [acquire(api, r, f"w{i}", capacity=3).json()["data"]["fencingToken"] for i in range(3)]
    assert tokens == [1, 2, 3]
    full = acquire(api, r, "w9", capacity=3)
    assert full.status_code == 409 and sorted(full.json()["data"]["heldBy"]) == ["w0", "w1", "w2"]
    conflict = acquire(api, r, "w9", capacity=4)
    assert conflict.status_code == 409 and conflict.json()["data"]["outcome"] == "CONFLICT"
    view = lease(api, "get", resource=r).json()["data"]
    assert view["outcome"] == "HOLDING" and len(view["holders"]) == 3


def test_wait_is_served_first_come_first_served(server: Server, api: httpx.Client) -> None:
    r = rid()
    first = acquire(api, r, "holder", ttlSeconds=30).json()["data"]

    def wait(holder: str) -> httpx.Response:
        with server.client() as own:
            return lease(own, "wait", resource=r, holder=holder, waitSeconds=10)

    with ThreadPoolExecutor(2) as pool:
        early = pool.submit(wait, "early")
        time.sleep(0.3)
        late = pool.submit(wait, "late")
        time.sleep(0.3)
        lease(api, "release", resource=r, ownerToken=first["ownerToken"])
        winner = early.result().json()["data"]
        assert early.result().status_code == 201 and winner["fencingToken"] == 2
        lease(api, "release", resource=r, ownerToken=winner["ownerToken"])
        assert late.result().status_code == 201
        assert late.result().json()["data"]["fencingToken"] == 3


def test_wait_times_out_like_a_refusal(api: httpx.Client) -> None:
    r = rid()
    acquire(api, r, ttlSeconds=30)
    started = time.monotonic()
    timed_out = acquire(api, r, "w2", waitSeconds=1)
    assert 0.9 <= time.monotonic() - started < 5
    assert timed_out.status_code == 409 and timed_out.json()["data"]["outcome"] == "HELD"


def test_complete_stores_redacted_result_and_answers_it(api: httpx.Client) -> None:
    r = rid()
    granted = acquire(api, r, fingerprint="input-v1").json()["data"]
    result = {"invoice": 1009, "nested": {"api_key": "sk-live", "Password": "p"}, "token": "t"}
    done = lease(api, "complete", resource=r, ownerToken=granted["ownerToken"], result=result)
    assert done.status_code == 200 and done.json()["data"]["outcome"] == "COMPLETED"
    stored = {"invoice": 1009, "nested": {"api_key": "[redacted]", "Password": "[redacted]"}}
    stored["token"] = "[redacted]"
    again = acquire(api, r, "w2", fingerprint="input-v1")
    assert again.status_code == 200
    data = again.json()["data"]
    assert data["outcome"] == "COMPLETED" and data["result"] == stored
    assert "ownerToken" not in data and data["granted"] is False
    other = acquire(api, r, "w2", fingerprint="input-v2")
    assert other.status_code == 409 and other.json()["data"]["outcome"] == "CONFLICT"


def test_request_id_replays_without_applying_twice(api: httpx.Client) -> None:
    r = rid()
    first = acquire(api, r, requestId="req-1")
    size = ledger_size(api)
    replay = acquire(api, r, requestId="req-1")
    assert replay.status_code == 200
    data = replay.json()["data"]
    assert data["replayed"] is True
    assert data["fencingToken"] == first.json()["data"]["fencingToken"]
    assert data["ledger"] == first.json()["data"]["ledger"]
    assert "ownerToken" not in data
    assert ledger_size(api) == size
    changed = acquire(api, r, ttlSeconds=99, requestId="req-1")
    assert changed.status_code == 409
    assert changed.json()["data"]["outcome"] == "IDEMPOTENCY_CONFLICT"


def test_scope_resume_packet_and_scope_release(api: httpx.Client) -> None:
    scope = rid("scope")
    names = [rid(), rid()]
    for name in names:
        assert acquire(api, name, scope=scope).status_code == 201
    packet = api.get(f"/api/v1/scopes/{scope}").json()["data"]
    assert sorted(item["resource"] for item in packet["leases"]) == sorted(names)
    released = api.post(f"/api/v1/scopes/{scope}/release", json={}).json()["data"]
    assert len(released["releasedIds"]) == 2
    for name in names:
        assert acquire(api, name, "other").status_code == 201


def test_dead_man_switch_releases_the_scope(api: httpx.Client) -> None:
    scope = rid("scope")
    name = rid()
    acquire(api, name, scope=scope, ttlSeconds=60)
    armed = api.post(f"/api/v1/scopes/{scope}/heartbeat", json={"deadSeconds": 1})
    assert armed.status_code == 200 and armed.json()["data"]["armed"] is True
    time.sleep(1.5)
    assert api.get(f"/api/v1/scopes/{scope}").json()["data"]["leases"] == []
    assert acquire(api, name, "other").status_code == 201


def test_snake_case_aliases_and_op_in_body(api: httpx.Client) -> None:
    r = rid()
    body = {"op": "acquire", "resource": r, "agent_id": "w1", "ttl_seconds": 10}
    granted = api.post("/api/v1/lease", json=body)
    assert granted.status_code == 201 and granted.json()["data"]["holder"] == "w1"
    token = granted.json()["data"]["ownerToken"]
    released = api.post(
        "/api/v1/lease", json={"op": "release", "resource": r, "owner_token": token}
    )
    assert released.json()["data"]["outcome"] == "RELEASED"


def test_openapi_is_served(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    assert {"/api/v1/lease", "/api/v1/lease/acquire", "/api/v1/lease/complete"} <= set(
        spec["paths"]
    )


def test_a_waiter_that_hangs_up_is_not_granted_the_slot(server: Server, api: httpx.Client) -> None:
    r = rid()
    first = acquire(api, r, "holder", ttlSeconds=30).json()["data"]
    gone = httpx.Client(base_url=server.url, timeout=0.5)
    with contextlib.suppress(httpx.TimeoutException):  # the client gives up and hangs up
        lease(gone, "wait", resource=r, holder="gone", waitSeconds=30)
    gone.close()
    time.sleep(0.6)  # the server notices within its poll interval (0.25 s)
    lease(api, "release", resource=r, ownerToken=first["ownerToken"])
    successor = acquire(api, r, "present")
    assert successor.status_code == 201, successor.json()["data"]
    assert successor.json()["data"]["fencingToken"] == 2
