"""The default origin comes from the log's configured host name (TENURE_HOST_NAME), and a log
keeps the origin its checkpoints were signed under, whatever the next start configures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from api.app import create_app
from api.cli import main
from api.settings import Settings
from tests.conftest import rid


def served_origin(tmp_path: Path, host_name: str | None) -> str:
    """Start the log (once more), take a lease, and return the origin it signs under."""
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys", host_name=host_name)
    with TestClient(create_app(settings)) as client:
        body = {"resource": rid(), "holder": "w"}
        assert client.post("/api/v1/lease/acquire", json=body).status_code == 201
        return str(client.get("/api/v1/log/checkpoint").json()["origin"])


def test_a_new_log_is_named_after_its_host_and_keeps_that_name(tmp_path: Path) -> None:
    origin = served_origin(tmp_path, "ledger.example.com")
    assert origin.startswith("ledger.example.com/log/")
    assert served_origin(tmp_path, None) == origin  # restarted without it: same log, same name
    assert served_origin(tmp_path, "other.example.com") == origin


def test_the_export_of_a_young_log_names_the_host_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, keys, out = tmp_path / "data", tmp_path / "keys", tmp_path / "ledger.jsonl"
    with TestClient(create_app(Settings(data_dir=data, keys_dir=keys))):
        pass  # a log with no entry and no checkpoint
    monkeypatch.setenv("TENURE_HOST_NAME", "ledger.example.com")
    args = ["export", "--data", str(data), "--keys", str(keys), "--out", str(out), "--quiet"]
    assert main(args) == 0
    header = json.loads(out.read_text().splitlines()[0])
    assert header["origin"].startswith("ledger.example.com/log/")


@pytest.mark.parametrize("bad", ["Ledger.Example.com", "a b", "x/log", "-x.com", ""])
def test_a_host_name_that_cannot_prefix_an_origin_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValidationError, match="host_name"):
        Settings(data_dir=tmp_path, keys_dir=tmp_path, host_name=bad)
