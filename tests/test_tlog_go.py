"""An independent tile reader — Go's golang.org/x/mod/sumdb/tlog (tests/interop/tlog/main.go) —
verifies a live `tenure serve` from its C2SP tiles over a real socket, and the static copy
`tenure export --tiles` writes: the checkpoint's signature, the inclusion of every entry of the
entry bundles, and the consistency of an older checkpoint; a tampered copy fails. It checks a
receipt's entry from its c2sp.org/tlog-proof as well."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from api.cli import main as tenure
from tests import tlog_go
from tests.conftest import Server, lease, rid
from verify.multikey import public_key_from_multibase
from verify.note import vkey

FIRST, SECOND = 150, 600  # the second tree has two full level-0 tiles and a level-1 tile


def grow(api: httpx.Client, size: int) -> None:
    while int(api.get("/checkpoint").text.split("\n")[1]) < size:
        for _ in range(50):
            assert lease(api, "acquire", resource=rid(), holder="w").status_code == 201


def checkpoint_of(text: str) -> tuple[int, str]:
    lines = text.split("\n")
    return int(lines[1]), lines[2]


def log_vkey(api: httpx.Client) -> str:
    """The log's signed-note verifier key, as Go's note package reads it."""
    active = next(key for key in api.get("/api/v1/keys").json()["keys"] if key["active"])
    public = public_key_from_multibase(active["publicKeyMultibase"])
    origin = api.get("/checkpoint").text.split("\n")[0]
    return vkey(origin, public.public_bytes(Encoding.Raw, PublicFormat.Raw))


def export_tiles(server: Server, folder: Path) -> None:
    args = ["export", "--data", str(server.data), "--keys", str(server.root / "keys")]
    assert tenure([*args, "--tiles", str(folder), "--quiet"]) == 0


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live log grown past FIRST and then SECOND entries, exported as tiles at each size: the
    first copy kept apart, the second written over a copy of the first (incrementally)."""
    tlog_go.require_go()
    folder = tmp_path_factory.mktemp("tlog")
    checker = tlog_go.build(folder)
    (folder / "server").mkdir()
    server = Server(folder / "server").start()
    try:
        with server.client() as api:
            grow(api, FIRST)
            export_tiles(server, folder / "first")
            first = checkpoint_of((folder / "first" / "checkpoint").read_text())
            grow(api, SECOND)
            shutil.copytree(folder / "first", folder / "second")
            export_tiles(server, folder / "second")
            yield {
                **{"api": api, "server": server, "checker": checker, "folder": folder},
                **{"first": first, "vkey": log_vkey(api)},
            }
    finally:
        server.stop()


def go_check(log: dict[str, Any], base: str, **options: Any) -> tuple[str, str, int]:
    done = tlog_go.check(log["checker"], base, vkey=log["vkey"], **options)
    return done.stdout, done.stderr, done.returncode


def test_go_verifies_a_live_log_from_its_tiles(log: dict[str, Any]) -> None:
    size, _ = checkpoint_of(log["api"].get("/checkpoint").text)
    out, err, code = go_check(log, log["server"].url, old=log["first"])
    assert code == 0, err
    assert f"inclusion: {size} entries verified" in out
    assert f"consistency: {log['first'][0]} -> {size} verified" in out


def test_go_verifies_the_static_copies_export_tiles_wrote(log: dict[str, Any]) -> None:
    folder = log["folder"]
    out, err, code = go_check(log, str(folder / "first"))
    assert code == 0, err
    assert f"inclusion: {log['first'][0]} entries verified" in out
    size, _ = checkpoint_of((folder / "second" / "checkpoint").read_text())
    assert size >= SECOND
    out, err, code = go_check(log, str(folder / "second"), old=log["first"])
    assert code == 0, err
    assert f"inclusion: {size} entries verified" in out
    assert f"consistency: {log['first'][0]} -> {size} verified" in out


def tampered(log: dict[str, Any], path: str, at: int) -> Path:
    """A copy of the second export with one bit of ``path`` flipped, ``at`` from the start (or,
    negative, from the end of the note's text)."""
    copy = log["folder"] / f"tampered-{path.replace('/', '-')}"
    shutil.copytree(log["folder"] / "second", copy)
    data = bytearray((copy / path).read_bytes())
    data[at if at >= 0 else data.index(b"\n\n") + at] ^= 1
    (copy / path).write_bytes(bytes(data))
    return copy


@pytest.mark.parametrize(
    ("path", "at", "says"),
    [
        ("tile/entries/000", 10, "entry 0"),  # an entry's bytes: its record hash is not in the tree
        ("tile/0/000", 40, "entry 0: invalid transparency proof"),  # leaf 1's hash
        ("checkpoint", -2, "checkpoint signature"),  # the root line: the signature fails
    ],
)
def test_go_refuses_a_tampered_copy(log: dict[str, Any], path: str, at: int, says: str) -> None:
    _, err, code = go_check(log, str(tampered(log, path, at)))
    assert code == 1 and says in err


def test_a_different_old_root_is_not_consistent(log: dict[str, Any]) -> None:
    size, root = log["first"]
    forged = base64.b64encode(bytes(32)).decode()
    assert root != forged
    _, err, code = go_check(log, log["server"].url, old=(size, forged))
    assert code == 1 and f"consistency {size} ->" in err


def test_go_verifies_a_receipts_tlog_proof(log: dict[str, Any], tmp_path: Path) -> None:
    api = log["api"]
    answer = lease(api, "acquire", resource=rid(), holder="w").json()["data"]["ledger"]
    size = checkpoint_of(api.get("/checkpoint").text)[0]
    proofs = {i: api.get(f"/api/v1/log/tlog-proof/{i}").text for i in (0, answer["logIndex"])}
    for index, text in proofs.items():
        (tmp_path / f"{index}.tlog-proof").write_text(text)
        done = tlog_go.check_proof(log["checker"], tmp_path / f"{index}.tlog-proof", log["vkey"])
        assert done.returncode == 0, done.stderr
        assert f"proof: entry {index} of " in done.stdout and f" {size} verified" in done.stdout
    lines = proofs[0].split("\n")  # entry 0's proof with another entry in its extra line
    lines[1] = proofs[answer["logIndex"]].split("\n")[1]
    (tmp_path / "swapped.tlog-proof").write_text("\n".join(lines))
    done = tlog_go.check_proof(log["checker"], tmp_path / "swapped.tlog-proof", log["vkey"])
    assert done.returncode == 1 and "proof: entry 0:" in done.stderr
