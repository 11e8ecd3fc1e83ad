"""A receipt's entry as a C2SP tlog-proof (verify/tlog_proof.py, GET /api/v1/log/tlog-proof/N):
the proof alone recomputes the leaf hash the receipt states and proves it into a checkpoint the
log's key signed; a bundle converts to the same proof; anything altered fails, naming why."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from tests.conftest import rid
from verify.errors import MalformedInput, ProofError, SignatureError
from verify.multikey import public_key_from_multibase
from verify.rfc9162 import leaf_hash
from verify.tlog_proof import HEADER, from_bundle, parse, verify

NOW = 1_767_000_000_000


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("tlogproof")
    settings = Settings(data_dir=folder / "data", keys_dir=folder / "keys")
    with TestClient(create_app(settings, clock=lambda: NOW)) as client:
        answers = [
            client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"}).json()
            for _ in range(5)
        ]
        key = next(k for k in client.get("/api/v1/keys").json()["keys"] if k["active"])
        public = public_key_from_multibase(key["publicKeyMultibase"])
        raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
        origin = client.get("/api/v1/log/checkpoint").json()["origin"]
        yield {"client": client, "answers": answers, "key": raw, "origin": origin}


def proof_of(log: dict[str, Any], index: int) -> str:
    answer = log["client"].get(f"/api/v1/log/tlog-proof/{index}")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    return str(answer.text)


def test_a_receipts_entry_verifies_from_its_tlog_proof_alone(log: dict[str, Any]) -> None:
    for answer in log["answers"]:
        ledger = answer["data"]["ledger"]
        text = proof_of(log, ledger["logIndex"])
        assert text.startswith(f"{HEADER}\nextra ")
        checkpoint = verify(text, log["origin"], log["key"])
        assert checkpoint.size == 5 and checkpoint.origin == log["origin"]
        proof = parse(text)
        assert proof.index == ledger["logIndex"]
        assert proof.extra is not None
        assert base64.b64encode(leaf_hash(proof.extra)).decode() == ledger["leafHash"]


def test_a_bundle_converts_to_the_same_tlog_proof(log: dict[str, Any]) -> None:
    bundle = log["client"].get("/api/v1/log/bundle/3").json()
    assert from_bundle(bundle) == proof_of(log, 3)
    with pytest.raises(MalformedInput, match="not a receipt bundle"):
        from_bundle({"inclusion": {}})


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def test_an_altered_proof_fails_naming_why(log: dict[str, Any]) -> None:
    text = proof_of(log, 2)
    lines = text.split("\n")
    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    with pytest.raises(SignatureError):
        verify(text, log["origin"], other)
    with pytest.raises(SignatureError):
        verify(text, "example.com/log/other", log["key"])
    with pytest.raises(ProofError):
        verify(text, log["origin"], log["key"], entry=b'{"forged":1}')
    moved = "\n".join([lines[0], lines[1], "index 1", *lines[3:]])
    with pytest.raises(ProofError):
        verify(moved, log["origin"], log["key"])
    flipped = ("B" if lines[3][0] == "A" else "A") + lines[3][1:]
    with pytest.raises(ProofError):
        verify("\n".join([*lines[:3], flipped, *lines[4:]]), log["origin"], log["key"])
    last = lines[3][-2]
    unused = lines[3][:-2] + _B64[_B64.index(last) ^ 1] + lines[3][-1]
    with pytest.raises(MalformedInput, match="not canonical base64"):
        verify("\n".join([*lines[:3], unused, *lines[4:]]), log["origin"], log["key"])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("c2sp.org/tlog-proof@v2\nindex 0\n\nnote", "starts with"),
        (f"{HEADER}\nindex 0\nnote", "blank line"),
        (f"{HEADER}\nindex 01\n\nnote", "index N"),
        (f"{HEADER}\nextra !!\nindex 0\n\nnote", "extra is not standard base64"),
        (f"{HEADER}\nindex 0\nAAAA\n\nnote", "3 bytes, want 32"),
    ],
)
def test_a_malformed_proof_is_refused(text: str, says: str) -> None:
    with pytest.raises(MalformedInput, match=says):
        parse(text)


def test_an_index_outside_the_tree_is_a_400_naming_it(log: dict[str, Any]) -> None:
    for path in ("/api/v1/log/tlog-proof/5", "/api/v1/log/tlog-proof/-1"):
        answer = log["client"].get(path)
        assert answer.status_code == 400
        assert answer.json()["data"]["error"]["field"] == "index"
