"""An export made where the log's key is at hand ends with a checkpoint covering it, so
`tenure audit --trust` of a young ledger passes — even of one with no entry yet, or with
entries no stored checkpoint covers (the server is still running)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main
from api.settings import Settings
from tests.conftest import rid


@pytest.mark.parametrize("entries", [0, 2])
def test_an_export_of_a_young_ledger_audits_ok(
    tmp_path: Path, entries: int, capsys: pytest.CaptureFixture[str]
) -> None:
    data, keys, out = tmp_path / "data", tmp_path / "keys", tmp_path / "ledger.jsonl"
    with TestClient(create_app(Settings(data_dir=data, keys_dir=keys))) as client:
        for _ in range(entries):
            body = {"resource": rid(), "holder": "w"}
            assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
        did = client.get("/api/v1/keys").json()["keys"][0]["did"]
        export = ["export", "--data", str(data), "--keys", str(keys), "--out", str(out)]
        assert main([*export, "--quiet"]) == 0
    assert main(["audit", str(out), "--trust", did, "--quiet"]) == 0
    assert f"{entries} entries, 1/1 checkpoints verified, 1 keys: OK" in capsys.readouterr().out
