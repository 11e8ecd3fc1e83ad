"""What the seeds' users expect of an answer: the lease at the top of a `get`, the
current fencing token in refusals and completions, the granted TTL, a wrong owner token named
as such, and `/log/entries` defaults."""

from __future__ import annotations

import httpx

from tests.conftest import Server, lease, rid


def test_a_wrong_owner_token_on_a_live_lease_says_it_does_not_match(api: httpx.Client) -> None:
    r = rid()
    lease(api, "acquire", resource=r, holder="w")
    wrong = "own_" + "A" * 43
    for op in ("renew", "release"):
        data = lease(api, op, resource=r, ownerToken=wrong).json()["data"]
        assert data["witnesses"][-1]["reason"] == "ownerToken does not match the live lease", op
    assert lease(api, "get", resource=r).json()["data"]["outcome"] == "HOLDING"
    gone = rid()
    data = lease(api, "renew", resource=gone, ownerToken=wrong).json()["data"]
    assert data["witnesses"][-1]["reason"] == "no live lease"


def test_get_of_a_capacity_one_lease_carries_the_lease_at_the_top(api: httpx.Client) -> None:
    r = rid()
    granted = lease(api, "acquire", resource=r, holder="w", ttlSeconds=45).json()["data"]
    assert granted["ttlSeconds"] == 45
    got = lease(api, "get", resource=r).json()["data"]
    assert got["holder"] == "w"
    assert got["fencingToken"] == granted["fencingToken"]
    assert got["expiresAt"] == granted["expiresAt"]
    assert got["holders"] == [{k: granted[k] for k in ("holder", "fencingToken", "expiresAt")}]
    renewed = lease(api, "renew", resource=r, ownerToken=granted["ownerToken"], ttlSeconds=20)
    assert renewed.json()["data"]["ttlSeconds"] == 20


def test_refusals_and_completions_carry_the_current_fencing_token(api: httpx.Client) -> None:
    r = rid()
    granted = lease(api, "acquire", resource=r, holder="a", fingerprint="job-1").json()["data"]
    held = lease(api, "acquire", resource=r, holder="b").json()["data"]
    assert held["outcome"] == "HELD" and held["fencingToken"] == granted["fencingToken"]
    token = granted["ownerToken"]
    lease(api, "complete", resource=r, ownerToken=token, result={"ok": True})
    done = lease(api, "acquire", resource=r, holder="c", fingerprint="job-1").json()["data"]
    assert done["outcome"] == "COMPLETED" and done["fencingToken"] == granted["fencingToken"]


def test_log_entries_default_and_clamp_end(api: httpx.Client) -> None:
    lease(api, "acquire", resource=rid(), holder="w")
    size = api.get("/api/v1/log/checkpoint").json()["treeSize"]
    everything = api.get("/api/v1/log/entries")
    assert everything.status_code == 200, everything.text
    assert len(everything.json()["entries"]) == min(size, 1000)
    clamped = api.get("/api/v1/log/entries", params={"start": size - 1, "end": size + 50})
    assert clamped.status_code == 200, clamped.text
    assert [e["index"] for e in clamped.json()["entries"]] == [size - 1]
    assert api.get("/api/v1/log/entries", params={"start": 1, "end": 1}).status_code == 400


def test_a_throttled_tenant_can_still_renew_and_release(fresh_server: Server) -> None:
    fresh_server.args = ["--rate-limit", "1"]
    fresh_server.start()
    with fresh_server.client() as api:
        r = rid()
        token = lease(api, "acquire", resource=r, holder="w").json()["data"]["ownerToken"]
        codes = [lease(api, "get", resource=r).status_code for _ in range(5)]
        assert 429 in codes
        assert lease(api, "acquire", resource=rid(), holder="w").status_code == 429
        assert lease(api, "renew", resource=r, ownerToken=token).status_code == 200
        assert lease(api, "release", resource=r, ownerToken=token).status_code == 200
