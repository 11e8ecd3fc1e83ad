"""The log as C2SP tlog-tiles (api/tile_routes.py) and `tenure export --tiles`, in process with a
fixed clock: what a tile client reads is the log the JSON routes show, cached as the spec says,
and a bad path is a 400 or 404 in tenure's error shape."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as tenure
from api.settings import Settings
from tests.conftest import rid
from verify.rfc9162 import leaf_hash

NOW = 1_767_000_000_000
ENTRIES = 300  # a full level-0 tile, a partial one and a level-1 tile


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("tiles")
    settings = Settings(data_dir=folder / "data", keys_dir=folder / "keys")
    with TestClient(create_app(settings, clock=lambda: NOW)) as client:
        for _ in range(ENTRIES):
            client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
        yield {"client": client, "folder": folder}


def leaves(client: TestClient, start: int, end: int) -> list[bytes]:
    page = client.get("/api/v1/log/entries", params={"start": start, "end": end}).json()
    return [base64.b64decode(item["leaf"]) for item in page["entries"]]


def test_the_checkpoint_is_the_signed_note_as_text(log: dict[str, Any]) -> None:
    client = log["client"]
    answer = client.get("/checkpoint")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.headers["cache-control"] == "no-cache"
    assert answer.text == client.get("/api/v1/log/checkpoint").json()["note"]
    assert answer.text.split("\n")[1] == str(ENTRIES)
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path == "/checkpoint" or path.startswith("/tile")]


def test_hash_tiles_are_the_leaf_hashes_full_ones_cached_for_a_year(log: dict[str, Any]) -> None:
    client = log["client"]
    hashes = [leaf_hash(leaf) for leaf in leaves(client, 0, ENTRIES)]
    full = client.get("/tile/0/000")
    assert full.status_code == 200 and full.content == b"".join(hashes[:256])
    assert full.headers["cache-control"] == "public, max-age=31536000, immutable"
    partial = client.get("/tile/0/001.p/44")
    assert partial.content == b"".join(hashes[256:300])
    assert partial.headers["cache-control"] == "public, max-age=5"
    older = client.get("/tile/0/001.p/10")  # what a client of an older checkpoint asks
    assert older.content == b"".join(hashes[256:266])
    top = client.get("/tile/1/000.p/1").content
    root_of_first_256 = client.get("/api/v1/log/proof/consistency?first=256&second=256")
    assert base64.b64encode(top).decode() == root_of_first_256.json()["firstRootHash"]


def test_entry_bundles_are_the_exact_entries_length_prefixed(log: dict[str, Any]) -> None:
    client = log["client"]
    bundle = client.get("/tile/entries/001.p/44")
    assert bundle.status_code == 200
    want = b"".join(len(leaf).to_bytes(2, "big") + leaf for leaf in leaves(client, 256, 300))
    assert bundle.content == want


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/tile/0/001", 404, "the tree has no tile/0/001 yet"),
        ("/tile/0/001.p/45", 404, "no tile/0/001.p/45"),
        ("/tile/entries/002.p/1", 404, "no tile/entries/002.p/1"),
        ("/tile/2/000.p/1", 404, "no tile/2/000.p/1"),
        ("/tile/0/1", 400, "3-digit groups"),
        ("/tile/0/000.p/256", 400, "width must be a decimal integer 1..255"),
        ("/tile/64/000", 400, "level must be a decimal integer 0..63"),
        ("/tile/data/000", 400, "level"),
        ("/tile/0/" + "x999/" * 30 + "999", 400, "at most"),
    ],
)
def test_a_bad_tile_path_is_refused_in_tenures_shape(
    log: dict[str, Any], path: str, status: int, says: str
) -> None:
    answer = log["client"].get(path)
    assert answer.status_code == status
    error = answer.json()["data"]["error"]
    assert error["field"] == "path" and says in error["message"]
    assert answer.json()["data"]["status"] == "fail"


def export(log: dict[str, Any], *extra: str) -> int:
    folder = log["folder"]
    args = ["export", "--data", str(folder / "data"), "--keys", str(folder / "keys")]
    return tenure([*args, *extra, "--quiet"])


def test_export_tiles_writes_what_the_server_serves(log: dict[str, Any], tmp_path: Path) -> None:
    client = log["client"]
    assert export(log, "--tiles", str(tmp_path)) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        "checkpoint",
        "tile/0/000",
        "tile/0/001.p/44",
        "tile/1/000.p/1",
        "tile/entries/000",
        "tile/entries/001.p/44",
    ]
    for path in written[1:]:
        assert (tmp_path / path).read_bytes() == client.get(f"/{path}").content, path
    assert (tmp_path / "checkpoint").read_text() == client.get("/checkpoint").text


def test_export_needs_out_or_tiles(log: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert export(log) == 2
    assert "--out FILE, --tiles DIR or both" in capsys.readouterr().err


def test_export_tiles_never_writes_over_another_log_or_a_larger_tree(
    log: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.write_text("example.com/log/other\n5\nAAAA\n")
    assert export(log, "--tiles", str(tmp_path)) == 2
    assert "is of the log 'example.com/log/other'" in capsys.readouterr().err
    assert not (tmp_path / "tile").exists()
    origin = log["client"].get("/checkpoint").text.split("\n")[0]
    checkpoint.write_text(f"{origin}\n{ENTRIES + 1}\nAAAA\n")
    assert export(log, "--tiles", str(tmp_path)) == 2
    assert "a static copy never goes backwards" in capsys.readouterr().err
    checkpoint.unlink()
    (tmp_path / "tile" / "0").mkdir(parents=True)
    (tmp_path / "tile" / "0" / "000").write_bytes(b"\x00" * 8192)
    assert export(log, "--tiles", str(tmp_path)) == 2
    assert "tile/0/000 holds another log's tile" in capsys.readouterr().err
    assert not checkpoint.exists()
