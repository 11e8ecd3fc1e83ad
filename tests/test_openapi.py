"""The OpenAPI document tells the truth: schemathesis runs all its checks against a
live server, and a client generated from the document takes, reads and refuses leases."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from tests.conftest import ROOT, Server, lease, rid

CONFIG = ROOT / "tests" / "openapi" / "schemathesis.toml"
BIN = Path(sys.executable).parent


def create_key(data: Path) -> str:
    command = [sys.executable, "-m", "api", "apikey", "create", "openapi", "--data", str(data)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """A server with an API key and a few ledger entries; leases end within 2 s (--lifecycle),
    so a generated `wait` never blocks the run for long."""
    srv = Server(tmp_path_factory.mktemp("openapi"), ["--lifecycle", "2"])
    srv.start()  # `apikey create` needs the ledger the server makes
    key = create_key(srv.data)
    with srv.client() as api:
        for _ in range(3):
            lease(api, "acquire", resource=rid(), holder="seed")
    yield srv, key
    srv.stop()


def test_the_document_declares_what_the_server_sends(served: tuple[Server, str]) -> None:
    srv, _ = served
    doc = httpx.get(srv.url + "/openapi.json").json()
    assert set(doc["components"]["securitySchemes"]) == {"apiKey"}
    ops = ["acquire", "renew", "release", "get", "wait", "complete"]
    assert "/api/v1/lease/{op}" not in doc["paths"]  # described as the six paths it serves
    operation = doc["paths"]["/api/v1/lease/acquire"]["post"]
    assert set(operation["responses"]) >= {"200", "201", "401", "409", "413", "415", "422", "429"}
    assert operation["responses"]["409"]["headers"]["Retry-After"]
    headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
    assert set(headers) == {"Accept-Provenance", "Tenure-Namespace"}
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path in ("/api/v1/scopes/{scope}", "/api/v1/scopes/{scope}/release"):
        assert "Tenure-Namespace" in {
            p["name"] for p in next(iter(doc["paths"][path].values()))["parameters"]
        }
    for path in ("/api/v1/scopes/{scope}/heartbeat", "/api/v1/verify-provenance"):
        assert doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    verify = doc["paths"]["/api/v1/verify-provenance"]["post"]["requestBody"]
    assert verify["content"]["application/json"]["schema"]["$ref"].endswith("/Verifiable")
    schemas = doc["components"]["schemas"]
    assert [body["properties"]["op"]["const"] for body in schemas["LeaseOpBody"]["oneOf"]] == ops
    watch = doc["paths"]["/api/v1/watch/events"]["get"]  # a page of events; the stream is not
    assert "/api/v1/watch" not in doc["paths"]
    assert set(watch["responses"]) >= {"200", "400", "401", "403", "429", "503"}
    names = {p["name"] for p in watch["parameters"]}
    assert names >= {"from", "prefix", "scope", "holder", "limit", "Tenure-Namespace"}


def _accepts(schema: dict[str, Any], body: dict[str, Any]) -> bool:
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(body))


def test_each_op_declares_its_own_required_and_refused_fields(
    served: tuple[Server, str],
) -> None:
    """What ledger/lease/ops.py check_call refuses, the document refuses too, and the server
    agrees."""
    srv, key = served
    doc = httpx.get(srv.url + "/openapi.json").json()
    schemas = doc["components"]["schemas"]
    r = rid()
    cases = [
        ("acquire", {"resource": r}, True),  # holder is optional (docs/api.md, Seed shapes)
        ("acquire", {"resource": r, "holder": "w", "result": None}, False),
        ("renew", {"resource": r, "holder": "w"}, False),
        ("renew", {"resource": r, "ownerToken": "own_x", "waitSeconds": 5}, False),
        ("renew", {"resource": r, "ownerToken": "own_x", "waitSeconds": None}, True),
        ("complete", {"resource": r, "ownerToken": "own_x"}, False),
        ("get", {"resource": r, "namespace": "ns_short"}, False),
        ("get", {"resource": r}, True),
    ]
    with srv.client(Authorization=f"Bearer {key}") as api:
        for op, body, valid in cases:
            assert _accepts(schemas[f"Lease{op.title()}"], body) is valid, (op, body)
            assert (lease(api, op, **body).status_code != 422) is valid, (op, body)


@pytest.mark.skipif(shutil.which("st", path=str(BIN)) is None, reason="schemathesis missing")
def test_schemathesis_passes_every_check_against_a_live_server(
    served: tuple[Server, str],
) -> None:
    srv, key = served
    command = [str(BIN / "st"), "--config-file", str(CONFIG), "run", srv.url + "/openapi.json"]
    command += ["--checks", "all", "--max-examples", "10", "--request-timeout", "10"]
    command += ["--seed", "14", "--no-color", "-H", f"Authorization: Bearer {key}"]
    done = subprocess.run(command, cwd=srv.root, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def _generate(doc_path: Path, out: Path) -> None:
    command = [str(BIN / "openapi-python-client"), "generate", "--path", str(doc_path)]
    command += ["--output-path", str(out), "--meta", "none"]
    subprocess.run(command, cwd=out.parent, capture_output=True, text=True, check=True)


@pytest.mark.skipif(
    shutil.which("openapi-python-client", path=str(BIN)) is None, reason="generator missing"
)
def test_a_generated_client_takes_reads_and_is_refused(
    served: tuple[Server, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, key = served
    doc_path = tmp_path / "openapi.json"
    doc_path.write_bytes(httpx.get(srv.url + "/openapi.json").content)
    _generate(doc_path, tmp_path / "tenure_generated")
    monkeypatch.syspath_prepend(str(tmp_path))
    gen: Any = importlib.import_module("tenure_generated")
    acquire: Any = importlib.import_module("tenure_generated.api.default.lease_acquire")
    get: Any = importlib.import_module("tenure_generated.api.default.lease_get")
    models: Any = importlib.import_module("tenure_generated.models")
    client = gen.AuthenticatedClient(base_url=srv.url, token=key)
    r = rid()
    granted = acquire.sync_detailed(client=client, body=models.LeaseAcquire(r, holder="w"))
    assert granted.status_code == 201
    assert isinstance(granted.parsed, models.Answer)
    assert granted.parsed.data.outcome.value == "GRANTED" and granted.parsed.data.fencing_token
    read = get.sync_detailed(client=client, body=models.LeaseGet(r))
    assert isinstance(read.parsed, models.Answer) and read.parsed.data.holder == "w"
    bad = models.LeaseAcquire(r, holder="w", ttl_seconds=0)
    refused = acquire.sync_detailed(client=client, body=bad)
    assert refused.status_code == 422 and isinstance(refused.parsed, models.Refusal)
    assert refused.parsed.data.error.field == "ttlSeconds"
