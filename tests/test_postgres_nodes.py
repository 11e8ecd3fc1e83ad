"""Two `tenure serve --database` nodes on one PostgreSQL ledger (decisions/0009), over
real sockets: one grant per slot however the calls spread over the nodes, tokens that only grow
across them, FIFO waits woken across nodes, and one log whose proofs from one node verify
against the other's signed checkpoints."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.conftest import lease, rid
from tests.pg_nodes import Nodes, burst, two_nodes
from verify.multikey import public_key_from_multibase
from verify.note import parse_checkpoint, verify_note
from verify.rfc9162 import leaf_hash, verify_consistency, verify_inclusion


@pytest.fixture(scope="module")
def nodes(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    with two_nodes(postgres, tmp_path_factory.mktemp("nodes")) as pair:
        yield pair


@pytest.mark.parametrize("capacity", [1, 5])
def test_a_thousand_acquires_over_two_nodes_grant_exactly_the_capacity(
    nodes: Nodes, capacity: int
) -> None:
    answers = burst(nodes, 1000, resource=rid(), ttlSeconds=600, capacity=capacity)
    granted = sorted(a["fencingToken"] for a in answers if a["outcome"] == "GRANTED")
    assert granted == list(range(1, capacity + 1))
    assert sum(a["outcome"] == "HELD" for a in answers) == 1000 - capacity


def test_tokens_grow_strictly_across_nodes(nodes: Nodes) -> None:
    resource, tokens = rid(), []
    for n in range(20):
        acquired_on, released_on = nodes.both[n % 2], nodes.both[(n // 2) % 2]
        with acquired_on.client() as a, released_on.client() as b:
            data = lease(a, "acquire", resource=resource, holder=f"c{n}", ttlSeconds=60).json()
            tokens.append(data["data"]["fencingToken"])
            released = lease(b, "release", resource=resource, ownerToken=data["data"]["ownerToken"])
            assert released.status_code == 200, released.text
    assert tokens == list(range(1, 21))


def test_waiters_on_both_nodes_are_granted_in_order_as_holders_release_on_the_other(
    nodes: Nodes,
) -> None:
    resource = rid()
    with nodes.a.client() as api:
        held = lease(api, "acquire", resource=resource, holder="first", ttlSeconds=60).json()

    def wait(n: int) -> tuple[dict[str, Any], float]:
        with nodes.both[n % 2].client() as client:  # w0 on a, w1 on b, w2 on a, …
            body = {"resource": resource, "holder": f"w{n}", "waitSeconds": 30, "ttlSeconds": 60}
            answer = lease(client, "wait", **body)
            return answer.json()["data"], time.monotonic()

    base = nodes.queued()
    with ThreadPoolExecutor(6) as pool:
        futures = []
        for n in range(6):  # each joins the queue before the next is sent
            futures.append(pool.submit(wait, n))
            _until(lambda n=n: nodes.queued() >= base + n + 1, "the waiter never queued")
        token, order = held["data"]["ownerToken"], []
        for n in range(6):
            releaser = nodes.both[(n + 1) % 2]  # the other node than the next waiter's
            with releaser.client() as api:
                released_at = time.monotonic()
                lease(api, "release", resource=resource, ownerToken=token)
            granted, at = futures[n].result(timeout=30)
            assert at - released_at < 10, "woken only by its deadline, not by the other node"
            order.append(granted["holder"])
            token = granted["ownerToken"]
    assert order == [f"w{n}" for n in range(6)]


def test_proofs_from_one_node_verify_against_the_others_checkpoints(nodes: Nodes) -> None:
    burst(nodes, 40, resource=rid(), ttlSeconds=600, capacity=3)
    with nodes.a.client() as a, nodes.b.client() as b:
        old = _checkpoint(b)
        burst(nodes, 20, resource=rid(), ttlSeconds=600, capacity=3)
        new = _checkpoint(b)
        assert new[0] > old[0]
        for index in (0, old[0] // 2, new[0] - 1):
            body = a.get("/api/v1/log/proof/inclusion", params={"index": index, "treeSize": new[0]})
            entry = a.get("/api/v1/log/entries", params={"start": index, "end": index + 1})
            leaf = base64.b64decode(entry.json()["entries"][0]["leaf"])
            hashes = [base64.b64decode(h) for h in body.json()["hashes"]]
            verify_inclusion(index, new[0], leaf_hash(leaf), hashes, new[1])
        params = {"first": old[0], "second": new[0]}
        body = a.get("/api/v1/log/proof/consistency", params=params).json()
        hashes = [base64.b64decode(h) for h in body["hashes"]]
        verify_consistency(old[0], new[0], old[1], new[1], hashes)
        assert _checkpoint(a)[0] >= new[0]  # and a's own checkpoint covers b's


def _checkpoint(api: httpx.Client) -> tuple[int, bytes]:
    """The node's signed checkpoint, its note verified: (tree size, root hash)."""
    body = api.get("/api/v1/log/checkpoint").json()
    key = next(k for k in api.get("/api/v1/keys").json()["keys"] if k["active"])
    public = public_key_from_multibase(key["publicKeyMultibase"]).public_bytes_raw()
    parsed = parse_checkpoint(verify_note(body["note"], body["origin"], public))
    return parsed.size, parsed.root_hash


def _until(done: Any, why: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, why
        time.sleep(0.01)  # polling another process's progress, not making lease time pass
