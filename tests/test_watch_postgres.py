"""GET /api/v1/watch on two `tenure serve --database` nodes of one PostgreSQL ledger: a watch
open on node a gets, named and in log order, the events node b writes (names read from the
PostgreSQL state tables), and another tenant's never."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.pg_nodes import Nodes, two_nodes
from tests.watch_util import Event, lease_call, namespace, watch


@pytest.fixture
def nodes(postgres: Any, tmp_path: Any) -> Iterator[Nodes]:
    with two_nodes(postgres, tmp_path) as pair:
        yield pair


def test_a_watch_on_one_node_sees_the_other_nodes_events(nodes: Nodes) -> None:
    ns, other = namespace(nodes.a), namespace(nodes.a)
    page = httpx.get(nodes.a.url + "/api/v1/watch/events", headers={"Tenure-Namespace": ns})
    head = {"from": page.json()["data"]["treeSize"]}
    got: list[Event] = []
    reader = threading.Thread(target=lambda: got.extend(watch(nodes.a, ns, 4, **head)))
    reader.start()
    grant = lease_call(nodes.b, ns, "acquire", resource="pg:job", holder="w", scope="s")
    lease_call(nodes.b, other, "acquire", resource="pg:job", holder="w")
    lease_call(nodes.a, ns, "acquire", resource="pg:other", holder="w")
    lease_call(nodes.b, ns, "renew", resource="pg:job", ownerToken=grant["ownerToken"])
    lease_call(nodes.b, ns, "release", resource="pg:job", ownerToken=grant["ownerToken"])
    reader.join(timeout=60)
    assert [(d["data"]["op"], d["data"]["resource"]) for _, _, d in got] == [
        ("grant", "pg:job"),
        ("grant", "pg:other"),
        ("renew", "pg:job"),
        ("release", "pg:job"),
    ]
    in_scope = watch(nodes.b, ns, 1, **{"from": head["from"], "scope": "s", "prefix": "pg:"})
    assert in_scope[0][2]["data"]["ledger"]["logIndex"] == grant["ledger"]["logIndex"]
