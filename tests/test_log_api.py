"""The ledger as an auditor sees it over HTTP (DESIGN §3.4, §4): entries, RFC 9162 proofs,
signed C2SP checkpoints and keys, all checked with the offline verifier's own functions."""

from __future__ import annotations

import base64
import random
import sqlite3
import time

import httpx
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.conftest import Server, lease, rid
from verify.errors import VerificationError
from verify.multikey import public_key_from_multibase
from verify.note import parse_checkpoint, verify_note
from verify.rfc9162 import EMPTY_ROOT, leaf_hash, node_hash, verify_consistency, verify_inclusion


def b64d(value: str) -> bytes:
    return base64.b64decode(value)


def naive_root(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH, written plainly."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(naive_root(leaves[:k]), naive_root(leaves[k:]))


def all_leaves(api: httpx.Client) -> list[bytes]:
    leaves: list[bytes] = []
    size = api.get("/api/v1/log/checkpoint").json()["treeSize"]
    while len(leaves) < size:
        page = api.get("/api/v1/log/entries", params={"start": len(leaves), "end": size}).json()
        leaves += [b64d(item["leaf"]) for item in page["entries"]]
    return leaves


def note_key(api: httpx.Client) -> bytes:
    active = [key for key in api.get("/api/v1/keys").json()["keys"] if key["active"]]
    public = public_key_from_multibase(active[0]["publicKeyMultibase"])
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def make_events(api: httpx.Client, count: int) -> list[dict[str, object]]:
    answers = []
    for _ in range(count):
        r = rid()
        granted = lease(api, "acquire", resource=r, holder="w").json()["data"]
        answers.append(granted)
        released = lease(api, "release", resource=r, ownerToken=granted["ownerToken"])
        answers.append(released.json()["data"])
    return answers


def test_every_answer_leaf_and_root_recompute_from_entries(api: httpx.Client) -> None:
    answers = make_events(api, 20)
    leaves = all_leaves(api)
    for data in answers:
        position = data["ledger"]
        assert isinstance(position, dict)
        index = position["logIndex"]
        assert b64d(position["leafHash"]) == leaf_hash(leaves[index])
        assert position["treeSize"] == index + 1
        assert b64d(position["rootHash"]) == naive_root(leaves[: index + 1])


def test_random_inclusion_and_consistency_proofs_verify(api: httpx.Client) -> None:
    make_events(api, 15)
    leaves = all_leaves(api)
    size = len(leaves)
    rng = random.Random(7)
    for _ in range(40):
        tree = rng.randint(1, size)
        index = rng.randrange(tree)
        proof = api.get("/api/v1/log/proof/inclusion", params={"index": index, "treeSize": tree})
        body = proof.json()
        root = naive_root(leaves[:tree])
        assert b64d(body["rootHash"]) == root
        verify_inclusion(
            index, tree, leaf_hash(leaves[index]), [b64d(h) for h in body["hashes"]], root
        )
    for _ in range(40):
        second = rng.randint(1, size)
        first = rng.randint(1, second)
        body = api.get(
            "/api/v1/log/proof/consistency", params={"first": first, "second": second}
        ).json()
        hashes = [b64d(h) for h in body["hashes"]]
        verify_consistency(
            first, second, naive_root(leaves[:first]), naive_root(leaves[:second]), hashes
        )


def test_flipped_byte_in_proof_root_or_note_is_rejected(api: httpx.Client) -> None:
    make_events(api, 6)
    leaves = all_leaves(api)
    size = len(leaves)
    body = api.get("/api/v1/log/proof/inclusion", params={"index": 3, "treeSize": size}).json()
    hashes = [b64d(h) for h in body["hashes"]]
    root = b64d(body["rootHash"])
    for which in range(len(hashes)):
        broken = list(hashes)
        broken[which] = bytes([broken[which][0] ^ 1]) + broken[which][1:]
        with pytest.raises(VerificationError):
            verify_inclusion(3, size, leaf_hash(leaves[3]), broken, root)
    with pytest.raises(VerificationError):
        verify_inclusion(3, size, leaf_hash(leaves[3]), hashes, bytes([root[0] ^ 1]) + root[1:])
    checkpoint = api.get("/api/v1/log/checkpoint").json()
    origin, note = checkpoint["origin"], checkpoint["note"]
    key = note_key(api)
    verify_note(note, origin, key)
    for position in range(0, len(note) - 1, 7):
        flipped = note[:position] + chr(ord(note[position]) ^ 1) + note[position + 1 :]
        with pytest.raises(VerificationError):
            verify_note(flipped, origin, key)


def test_checkpoint_parses_as_a_c2sp_client_would(api: httpx.Client) -> None:
    make_events(api, 2)
    checkpoint = api.get("/api/v1/log/checkpoint").json()
    text = verify_note(checkpoint["note"], checkpoint["origin"], note_key(api))
    parsed = parse_checkpoint(text)
    assert parsed.origin == checkpoint["origin"]
    assert parsed.size == checkpoint["treeSize"]
    assert (
        parsed.root_hash
        == b64d(checkpoint["rootHash"])
        == naive_root(all_leaves(api)[: parsed.size])
    )
    lines = checkpoint["note"].split("\n")
    assert lines[1] == str(parsed.size) and lines[3] == ""
    assert lines[4].startswith("— " + checkpoint["origin"] + " ")


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("inclusion", {"index": 10**6, "treeSize": 1}, "index"),
        ("inclusion", {"index": 0, "treeSize": 10**9}, "treeSize"),
        ("consistency", {"first": 0, "second": 1}, "first"),
        ("consistency", {"first": 1, "second": 10**9}, "second"),
    ],
)
def test_proofs_outside_the_tree_are_4xx(
    api: httpx.Client, path: str, params: dict[str, int], field: str
) -> None:
    make_events(api, 1)
    response = api.get(f"/api/v1/log/proof/{path}", params=params)
    assert response.status_code == 400
    assert response.json()["data"]["error"]["field"] == field


def test_negative_or_missing_query_is_400(api: httpx.Client) -> None:
    assert api.get("/api/v1/log/entries", params={"start": -1, "end": 2}).status_code == 400
    assert api.get("/api/v1/log/proof/inclusion", params={"index": 0}).status_code == 400


def test_log_consistent_with_last_checkpoint_after_sigkill(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        make_events(api, 10)
        before = api.get("/api/v1/log/checkpoint").json()
        make_events(api, 5)
    fresh_server.kill()
    fresh_server.restart()
    with fresh_server.client() as api:
        after = api.get("/api/v1/log/checkpoint").json()
        assert after["treeSize"] >= before["treeSize"] + 10
        body = api.get(
            "/api/v1/log/proof/consistency",
            params={"first": before["treeSize"], "second": after["treeSize"]},
        ).json()
        verify_consistency(
            before["treeSize"],
            after["treeSize"],
            b64d(before["rootHash"]),
            b64d(after["rootHash"]),
            [b64d(h) for h in body["hashes"]],
        )
        assert after["origin"] == before["origin"]
        verify_note(after["note"], after["origin"], note_key(api))


def test_rotated_key_keeps_old_key_listed(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        old = api.get("/api/v1/keys").json()["keys"]
    fresh_server.stop()
    keys_dir = fresh_server.root / "keys"
    fresh_server.rotate_keys()
    assert all(path.stat().st_mode & 0o777 == 0o600 for path in keys_dir.iterdir())
    fresh_server.start()
    with fresh_server.client() as api:
        keys = api.get("/api/v1/keys").json()["keys"]
    assert len(old) == 1 and len(keys) == 2
    assert keys[0]["did"] == old[0]["did"] and keys[0]["validUntil"] is not None
    assert keys[1]["active"] and keys[1]["validUntil"] is None


def test_the_server_seals_new_entries_under_a_checkpoint_by_itself(fresh_server: Server) -> None:
    fresh_server.args = ["--checkpoint-interval", "0.2"]
    fresh_server.start()
    with fresh_server.client() as api:
        make_events(api, 3)
        size = api.get("/healthz").json()["data"]["ledger"]["treeSize"]
        time.sleep(0.8)  # the server's own timer must fire; no request asks for a checkpoint
    db = sqlite3.connect(f"file:{fresh_server.data / 'tenure.db'}?mode=ro", uri=True)
    sealed = db.execute("SELECT max(tree_size) FROM checkpoints").fetchone()[0]
    db.close()
    assert sealed == size
