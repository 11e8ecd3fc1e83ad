"""A log read outside the tree is a 400 naming the parameter, from every log route — one handler
answers them all, so a route added later cannot let one through as a 500."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.log.view import OutOfRange
from tests.conftest import rid


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """An in-process server on a real SQLite ledger holding one entry."""
    folder = tmp_path_factory.mktemp("range")
    app = create_app(Settings(data_dir=folder / "data", keys_dir=folder / "keys"))

    @app.get("/api/v1/log/later")
    async def later() -> None:
        raise OutOfRange("height", "height must be 0..7")

    with TestClient(app) as client:
        client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
        yield client


def assert_refused(response: httpx.Response, field: str, message: str) -> None:
    """tenure's plain refusal: 400, ``out_of_range``, the parameter named, the rule stated."""
    assert response.status_code == 400
    error = response.json()["data"]["error"]
    assert error == {"code": "out_of_range", "message": error["message"], "field": field}
    assert error["message"].startswith(message)


@pytest.mark.parametrize(
    ("path", "field", "message"),
    [
        ("/log/entries?start=5", "start", "start must be 0.."),
        ("/log/proof/inclusion?index=3&treeSize=1", "index", "index must be 0..0 for treeSize 1"),
        ("/log/proof/consistency?first=2&second=1", "first", "first must be 1..1 (RFC 9162"),
        ("/log/bundle/9", "index", "index must be 0.."),
        ("/log/later", "height", "height must be 0..7"),
    ],
)
def test_a_read_outside_the_tree_is_400_naming_the_parameter(
    client: TestClient, path: str, field: str, message: str
) -> None:
    assert_refused(client.get(f"/api/v1{path}"), field, message)


def test_a_saved_receipt_past_the_tree_is_400_naming_its_index(client: TestClient) -> None:
    acquired = client.post("/api/v1/lease/acquire", json={"resource": rid(), "holder": "w"})
    saved = acquired.json()
    saved["data"]["ledger"]["logIndex"] = 10**6
    assert_refused(client.post("/api/v1/log/bundle", json=saved), "index", "index must be 0..")
