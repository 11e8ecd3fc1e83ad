"""Every place a user reads the default ttl, the ceilings, the lifecycle or the version states the
value verify/defaults.py holds: the server's settings and refusals, the OpenAPI document, the MCP
tools, the Python client, the CLIs and the answers."""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api import lease_run, mcp_schema, refusals
from api.app import create_app
from api.client import AsyncClient, Client
from api.settings import Settings
from ledger.lease import answers, provenance
from ledger.writer import service
from verify.defaults import (
    DEAD_CEILING_SECONDS,
    DEFAULT_LIFECYCLE_SECONDS,
    DEFAULT_TTL_SECONDS,
    ENGINE,
    TTL_CEILING_SECONDS,
    VERSION,
)


def _lease_parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser()
    lease_run.add_lease_parser(root.add_subparsers(dest="command"))
    return root


def test_the_default_ttl_is_the_clients_the_mcp_tools_and_lease_runs() -> None:
    for method in (Client.acquire, Client.wait, Client.lease, AsyncClient.acquire):
        assert inspect.signature(method).parameters["ttl"].default == DEFAULT_TTL_SECONDS
    run = _lease_parser().parse_args(["lease", "run", "r"])
    assert run.ttl == DEFAULT_TTL_SECONDS
    described = mcp_schema.FIELDS["ttlSeconds"]["description"]
    assert f"default {DEFAULT_TTL_SECONDS};" in described


def test_the_ceilings_are_the_settings_the_refusals_and_the_schemas(tmp_path: Path) -> None:
    assert refusals._RANGES["ttlSeconds"] == (1, TTL_CEILING_SECONDS)
    assert refusals._RANGES["deadSeconds"] == (0, DEAD_CEILING_SECONDS)
    assert mcp_schema.FIELDS["ttlSeconds"]["maximum"] == TTL_CEILING_SECONDS
    assert mcp_schema.FIELDS["deadSeconds"]["maximum"] == DEAD_CEILING_SECONDS
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    assert settings.lifecycle_seconds == DEFAULT_LIFECYCLE_SECONDS
    app = create_app(settings)
    with TestClient(app) as client:
        document: dict[str, Any] = client.get("/openapi.json").json()
    heartbeat = document["components"]["schemas"]["HeartbeatBody"]["properties"]
    assert heartbeat["deadSeconds"]["maximum"] == DEAD_CEILING_SECONDS
    assert document["info"]["version"] == VERSION


def test_the_version_is_the_packages_and_the_answers() -> None:
    assert importlib.metadata.version("tenure") == VERSION
    assert answers.ENGINE == service.VERSIONS["engine"] == provenance.CLAIM_GENERATOR == ENGINE
