"""Offline verification is as strict as the server: one I-JSON reader (RFC 7493) for every
signed document, so a planted duplicate key or a ``fencingToken`` written ``1.0`` never passes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.client import InvalidRequest, RetryPolicy
from api.client.core import Core, Reply
from api.monitor_log import Log, Unavailable
from api.settings import Settings
from tests.conftest import rid
from verify.cli import main
from verify.errors import MalformedInput
from verify.export_records import parse_lines
from verify.ijson import NotIJSON, loads

PLANTED = b'"fencingToken":999,"holder":"mallory","outcome":"RELEASED",'


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A granted answer's exact bytes, its bundle's bytes, and the keyring file."""
    folder = tmp_path_factory.mktemp("ijson")
    settings = Settings(data_dir=folder / "data", keys_dir=folder / "keys")
    with TestClient(create_app(settings)) as client:
        granted = client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
        index = granted.json()["data"]["ledger"]["logIndex"]
        bundle = client.get(f"/api/v1/log/bundle/{index}").content
        keyring = folder / "keys.json"
        keyring.write_bytes(client.get("/api/v1/keys").content)
        yield {
            "response": granted.content,
            "bundle": bundle,
            "keys": str(keyring),
            "client": client,
        }


def verify(tmp_path: Path, body: bytes, keys: str) -> int:
    path = tmp_path / "doc.json"
    path.write_bytes(body)
    return main([str(path), "--keys", keys])


def planted(body: bytes) -> bytes:
    """The document with a forged fencingToken, holder and outcome before the real ones."""
    assert body.count(b'"data":{') == 1
    return body.replace(b'"data":{', b'"data":{' + PLANTED)


def as_float(body: bytes) -> bytes:
    assert b'"fencingToken":1,' in body
    return body.replace(b'"fencingToken":1,', b'"fencingToken":1.0,')


def test_the_genuine_documents_pass(saved: dict[str, Any], tmp_path: Path) -> None:
    assert verify(tmp_path, saved["response"], saved["keys"]) == 0
    assert verify(tmp_path, saved["bundle"], saved["keys"]) == 0


@pytest.mark.parametrize("kind", ["response", "bundle"])
def test_planted_duplicate_keys_fail_naming_the_key(
    saved: dict[str, Any], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(tmp_path, planted(saved[kind]), saved["keys"]) == 2
    out = capsys.readouterr().out
    assert "PASS" not in out
    assert any(f"duplicate key {name!r}" in out for name in ("fencingToken", "holder", "outcome"))


@pytest.mark.parametrize("kind", ["response", "bundle"])
def test_a_fencing_token_written_as_a_float_fails(
    saved: dict[str, Any], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(tmp_path, as_float(saved[kind]), saved["keys"]) == 1
    out = capsys.readouterr().out
    assert "fencingToken is the number 1.0" in out and "PASS" not in out


def test_the_server_refuses_what_the_offline_verifier_refuses(saved: dict[str, Any]) -> None:
    client: TestClient = saved["client"]
    headers = {"Content-Type": "application/json"}
    post = "/api/v1/verify-provenance"
    duplicate = client.post(post, content=planted(saved["response"]), headers=headers)
    assert duplicate.status_code == 422
    assert duplicate.json()["data"]["error"]["code"] == "duplicate_key"
    floated = client.post(post, content=as_float(saved["response"]), headers=headers).json()
    assert floated["data"]["status"] == "fail"


def test_an_export_line_with_a_repeated_key_is_refused() -> None:
    line = b'{"type":"entry","index":0,"index":1,"leaf":"e30="}\n'
    with pytest.raises(MalformedInput, match="line 1: duplicate key 'index'"):
        list(parse_lines([line]))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b'{"a":1,"a":1}', "duplicate key 'a'"),
        (b'["\\ud800"]', "lone surrogate \\ud800"),
        ('{"k\udc80":1}', "lone surrogate"),
        (b"[9007199254740992]", "integer 9007199254740992 is beyond"),
        (b"[-9007199254740992]", "integer -9007199254740992 is beyond"),
        (b"[1e400]", "beyond a double"),
        (b"[NaN]", "NaN is not a JSON number"),
        (b"\xff", "not UTF-8"),
        (b'{"a":1} x', "not JSON"),
    ],
)
def test_what_i_json_forbids_is_named(text: str | bytes, named: str) -> None:
    with pytest.raises(NotIJSON, match=None) as refused:
        loads(text, "doc")
    assert named in str(refused.value)


def test_what_i_json_allows_reads_as_json_does() -> None:
    text = b'{"a":[9007199254740991,-1,2.5,"\\ud83d\\ude00",null,true],"b":{}}'
    assert loads(text) == json.loads(text)


def test_the_monitor_reads_a_log_as_strictly() -> None:
    body = b'{"treeSize":1,"treeSize":2}'
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = httpx.Client(base_url="http://log", transport=transport)
    with client, pytest.raises(Unavailable, match="duplicate key 'treeSize'"):
        Log(client, 5.0).get("/api/v1/log/checkpoint")


def test_the_client_never_believes_an_answer_with_a_planted_key() -> None:
    data = {"status": "pass", "op": "acquire", "resource": "r", "outcome": "GRANTED"}
    text = json.dumps({"data": {**data, "fencingToken": 3, "ownerToken": "own_x"}})
    body = text.replace('{"status"', '{"fencingToken": 999, "status"', 1).encode()
    core = Core(None, 5.0, RetryPolicy(attempts=1), verify=False)
    flow = core.flow(core.lease("acquire", resource="r", holder="w"), lambda: 0.0, lambda: 1.0)
    next(flow)
    with pytest.raises(InvalidRequest, match="not a tenure answer"):
        flow.send(Reply(201, {}, body))
