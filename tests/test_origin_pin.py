"""`--origin` pins the log a bundle or an export is of: the same key serving two logs (or a
log renamed) cannot pass one log's proofs off as the other's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as tenure
from api.settings import Settings
from tests.conftest import rid
from verify.cli import main as verify_provenance


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A bundle, an export and the keyring of one log, as files; and its origin."""
    folder = tmp_path_factory.mktemp("origin")
    data, keys = folder / "data", folder / "keys"
    with TestClient(create_app(Settings(data_dir=data, keys_dir=keys))) as client:
        body = {"resource": rid(), "holder": "w"}
        index = client.post("/api/v1/lease/acquire", json=body).json()["data"]["ledger"]["logIndex"]
        bundle = client.get(f"/api/v1/log/bundle/{index}")
        keyring = client.get("/api/v1/keys")
        did = keyring.json()["keys"][0]["did"]
        export = folder / "ledger.jsonl"
        args = ["export", "--data", str(data), "--keys", str(keys), "--out", str(export)]
        assert tenure([*args, "--quiet"]) == 0
    (folder / "bundle.json").write_bytes(bundle.content)
    (folder / "keys.json").write_bytes(keyring.content)
    yield {
        "origin": bundle.json()["checkpoint"]["origin"],
        "bundle": str(folder / "bundle.json"),
        "keys": str(folder / "keys.json"),
        "export": str(export),
        "did": did,
    }


def test_verify_provenance_pins_a_bundles_origin(
    log: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    files = [log["bundle"], "--keys", log["keys"]]
    assert verify_provenance([*files, "--origin", log["origin"]]) == 0
    assert f"✓ origin: the checkpoint is of {log['origin']}" in capsys.readouterr().out
    assert verify_provenance([*files, "--origin", "example.com/log/other"]) == 1
    out = capsys.readouterr().out
    assert "✗ origin:" in out and "not the pinned 'example.com/log/other'" in out


def test_audit_pins_an_exports_origin(
    log: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    audit = ["audit", log["export"], "--trust", log["did"], "--quiet"]
    assert tenure([*audit, "--origin", log["origin"]]) == 0
    capsys.readouterr()
    assert tenure([*audit, "--origin", "example.com/log/other"]) == 1
    assert "export: origin: the export is of" in capsys.readouterr().out
