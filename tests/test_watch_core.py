"""ledger/lease/watch.py without a server: which entries a watch selects (the caller's tenant, then
the filters by pseudonym and by name), the event an entry becomes, and the gaps it says."""

from __future__ import annotations

import base64
import json
from typing import Any

from ledger.lease.entries import Pseudonyms
from ledger.lease.watch import Filters, Gap, Selector, in_order, start_of
from verify.jcs import canonicalize
from verify.rfc9162 import leaf_hash

MASTER = b"m" * 32
MINE, THEIRS = Pseudonyms.derive(MASTER, "ns/mine"), Pseudonyms.derive(MASTER, "ns/theirs")


def entry(names: Pseudonyms, resource: str, kind: str = "acquire", **more: Any) -> bytes:
    fields = {
        "v": 1,
        "index": 7,
        "time": "2026-01-01T00:00:00.000Z",
        "kind": kind,
        "tenant": names.tenant,
        "resource": names.resource(resource),
        "holder": names.holder(more.pop("holder", "w1")),
        "fencingToken": 3,
        "expiresAt": "2026-01-01T00:00:30.000Z",
        "leaseId": 5,
        **more,
    }
    return canonicalize(fields)


def selector(filters: Filters) -> Selector:
    known = {MINE.resource(n): n for n in ("deploy:web", "build:web")}
    return Selector(MINE, filters, lambda pseudonym, index: known.get(pseudonym))


def test_only_the_callers_tenant_and_every_op_named() -> None:
    everything = selector(Filters())
    assert everything.event(7, entry(THEIRS, "deploy:web")) is None
    for kind, op in [("acquire", "grant"), ("scope_release", "release"), ("revoke", "revoke")]:
        found = everything.event(7, entry(MINE, "deploy:web", kind))
        assert found is not None and found[0]["op"] == op


def test_the_event_carries_the_entry_and_its_leaf_hash() -> None:
    raw = entry(MINE, "deploy:web", trigger="deadman")
    found = selector(Filters()).event(7, raw)
    assert found is not None
    data, fields = found
    assert data["entry"].encode() == raw and fields == json.loads(raw)
    assert base64.b64decode(data["ledger"]["leafHash"]) == leaf_hash(raw)
    assert (data["resource"], data["fencingToken"], data["trigger"]) == ("deploy:web", 3, "deadman")
    assert data["ledger"]["logIndex"] == 7


def test_filters_by_name_and_by_pseudonym() -> None:
    web = entry(MINE, "deploy:web", holder="ci", scope=MINE.scope("team"))
    build = entry(MINE, "build:web")
    unnamed = entry(MINE, "forgotten")
    assert selector(Filters(prefix="deploy:")).event(7, web) is not None
    assert selector(Filters(prefix="deploy:")).event(7, build) is None
    assert selector(Filters(prefix="")).event(7, unnamed) is None  # no name: no prefix matches
    assert selector(Filters()).event(7, unnamed) is not None
    assert selector(Filters(scope="team")).event(7, web) is not None
    assert selector(Filters(scope="team")).event(7, build) is None
    assert selector(Filters(holder="ci")).event(7, web) is not None
    assert selector(Filters(holder="w1")).event(7, web) is None


def test_gaps_are_said_where_an_index_is_missing_or_too_old() -> None:
    read = [(3, b"a"), (4, b"b"), (7, b"c")]
    items = list(in_order(3, read))
    assert items[:2] == [(3, b"a"), (4, b"b")]
    assert isinstance(items[2], Gap) and (items[2].start, items[2].end) == (5, 7)
    assert items[3] == (7, b"c")
    assert start_of(90, 100, 20) == (90, None)
    begin, gap = start_of(10, 100, 20)
    assert begin == 80 and gap is not None
    assert (gap.start, gap.end, gap.reason) == (10, 80, "beyond_replay")
