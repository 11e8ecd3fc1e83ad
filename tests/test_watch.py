"""GET /api/v1/watch against a real `tenure serve`: a tenant's lease events in log order, each a
signed answer citing its entry, proven against a checkpoint; resumed with Last-Event-ID; the
filters; another tenant's events never seen; the anonymous tenant refused; the signed page."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import httpx
import pytest

from tests.conftest import ROOT, Server
from tests.test_log_api import note_key
from tests.watch_util import lease_call, namespace, watch
from verify.note import parse_checkpoint, verify_note
from verify.receipt import check_receipt
from verify.rfc9162 import leaf_hash, verify_inclusion
from verify.trust import keyring_periods


def _work(server: Server, ns: str, resource: str, scope: str | None = None) -> int:
    """grant, renew, release of ``resource``; the log index of the grant."""
    grant = lease_call(server, ns, "acquire", resource=resource, holder="w1", scope=scope)
    token = grant["ownerToken"]
    lease_call(server, ns, "renew", resource=resource, ownerToken=token)
    lease_call(server, ns, "release", resource=resource, ownerToken=token)
    index: int = grant["ledger"]["logIndex"]
    return index


def test_events_in_order_prove_against_a_checkpoint(server: Server) -> None:
    mine, theirs = namespace(server), namespace(server)
    start = _work(server, mine, "deploy:prod")
    _work(server, theirs, "deploy:prod")  # the same name in another tenant: never seen
    lease_call(server, mine, "acquire", resource="deploy:db", holder="w2")
    events = watch(server, mine, 4, **{"from": start})
    assert [(kind, data["data"]["op"]) for kind, _, data in events] == [
        ("lease", "grant"),
        ("lease", "renew"),
        ("lease", "release"),
        ("lease", "grant"),
    ]
    datas = [data["data"] for _, _, data in events]
    assert [d["resource"] for d in datas] == ["deploy:prod"] * 3 + ["deploy:db"]
    assert [ident for _, ident, _ in events] == [d["ledger"]["logIndex"] for d in datas]
    assert datas[0]["ledger"]["logIndex"] == start and datas[3]["ledger"]["logIndex"] == start + 6
    assert datas[0]["fencingToken"] == datas[1]["fencingToken"]

    keys = httpx.get(server.url + "/api/v1/keys").json()["keys"]
    trusted = keyring_periods(keys)
    checkpoint = httpx.get(server.url + "/api/v1/log/checkpoint").json()
    note = verify_note(
        checkpoint["note"], checkpoint["origin"], note_key(httpx.Client(base_url=server.url))
    )
    parsed = parse_checkpoint(note)
    for _, _, answer in events:
        entry = answer["data"]["entry"].encode()
        check_receipt(answer, trusted, None, entry)  # signed, and citing exactly this entry
        assert base64.b64decode(answer["data"]["ledger"]["leafHash"]) == leaf_hash(entry)
        index = answer["data"]["ledger"]["logIndex"]
        proof = httpx.get(
            server.url + "/api/v1/log/proof/inclusion",
            params={"index": index, "treeSize": parsed.size},
        ).json()
        hashes = [base64.b64decode(h) for h in proof["hashes"]]
        verify_inclusion(index, parsed.size, leaf_hash(entry), hashes, parsed.root_hash)
    tampered = json.loads(json.dumps(events[0][2]))
    tampered["data"]["fencingToken"] += 1
    with pytest.raises(Exception, match="data"):
        check_receipt(tampered, trusted)


def test_last_event_id_resumes_after_it(server: Server) -> None:
    ns = namespace(server)
    start = _work(server, ns, "job:a")
    first = watch(server, ns, 1, **{"from": start})
    assert first[0][1] == start
    resumed = watch(server, ns, 2, {"Last-Event-ID": str(start)}, **{"from": 0})
    assert [ident for _, ident, _ in resumed] == [start + 1, start + 2]


def test_filters_prefix_scope_holder(server: Server) -> None:
    ns = namespace(server)
    start = _work(server, ns, "deploy:web", scope="team-a")
    lease_call(server, ns, "acquire", resource="build:web", holder="ci", scope="team-b")
    lease_call(server, ns, "acquire", resource="deploy:api", holder="ci")
    by_prefix = watch(server, ns, 4, **{"from": start, "prefix": "deploy:"})
    assert [d["data"]["resource"] for _, _, d in by_prefix] == ["deploy:web"] * 3 + ["deploy:api"]
    by_scope = watch(server, ns, 1, **{"from": start + 1, "scope": "team-b"})
    assert by_scope[0][2]["data"]["resource"] == "build:web"
    by_holder = watch(server, ns, 2, **{"from": start, "holder": "ci"})
    assert [d["data"]["resource"] for _, _, d in by_holder] == ["build:web", "deploy:api"]


def test_the_page_route_is_one_signed_answer(server: Server) -> None:
    ns, other = namespace(server), namespace(server)
    start = _work(server, ns, "page:a")
    _work(server, other, "page:a")
    got = httpx.get(
        server.url + "/api/v1/watch/events",
        params={"from": start, "limit": 2},
        headers={"Tenure-Namespace": ns},
    )
    assert got.status_code == 200
    answer = got.json()
    check_receipt(answer, keyring_periods(httpx.get(server.url + "/api/v1/keys").json()["keys"]))
    data = answer["data"]
    assert [e["op"] for e in data["events"]] == ["grant", "renew"]
    assert data["next"] == start + 2
    rest = httpx.get(
        server.url + "/api/v1/watch/events",
        params={"from": data["next"]},
        headers={"Tenure-Namespace": ns},
    ).json()["data"]
    assert [e["op"] for e in rest["events"]] == ["release"]  # the other tenant's: not here


def test_anonymous_and_bad_input_are_refused_in_tenures_words(server: Server) -> None:
    anonymous = httpx.get(server.url + "/api/v1/watch")
    assert anonymous.status_code == 403
    assert anonymous.json()["data"]["error"]["code"] == "anonymous_watch"
    assert "_provenance" in anonymous.json()
    ns = {"Tenure-Namespace": namespace(server)}
    cases = [
        ({"from": -1}, {}, "from"),
        ({"from": "x"}, {}, "from"),
        ({"prefix": ""}, {}, "prefix"),
        ({}, {"Last-Event-ID": "abc"}, "Last-Event-ID"),
    ]
    for params, headers, field in cases:
        got = httpx.get(server.url + "/api/v1/watch", params=params, headers=ns | headers)
        assert got.status_code == 400, (params, got.text)
        assert got.json()["data"]["error"]["field"] == field


def test_the_api_docs_curl_example_streams_signed_events(server: Server) -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    section = text[text.index("## Watch a tenant's lease events") :]
    line = next(x for x in section.splitlines() if x.startswith("    curl")).strip()
    command = line.replace("localhost:8080", server.url.removeprefix("http://"))
    ns = namespace(server)
    lease_call(server, ns, "acquire", resource="deploy:docs", holder="w1")
    env = os.environ | {"NS": ns}
    with subprocess.Popen(["bash", "-c", command], env=env, stdout=subprocess.PIPE) as curl:
        assert curl.stdout is not None
        lines = [curl.stdout.readline().decode().rstrip("\n") for _ in range(6)][3:]
        curl.terminate()
    assert lines[0] == "event: lease" and lines[1].startswith("id: ")
    document = json.loads(lines[2].removeprefix("data: "))
    assert document["data"]["resource"] == "deploy:docs"
    checked = httpx.post(server.url + "/api/v1/verify-provenance", json=document).json()
    assert checked["data"]["status"] == "pass", checked
