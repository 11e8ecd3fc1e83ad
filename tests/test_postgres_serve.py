"""`tenure serve --database postgresql://…`: the lease rules, the tools and the failure mode of a
real server over a real PostgreSQL database (docs/postgres.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.responses import STORAGE_UNAVAILABLE
from tests.conftest import ROOT, Server, lease, rid
from tests.postgres import PostgresServer
from verify.audit import audit, parse_lines


def tenure(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    environment = {**os.environ, **env}
    return subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, env=environment
    )


def granted(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["data"])


def test_lease_rules_tools_and_audit_over_postgresql(
    fresh_server: Server, postgres_url: str, tmp_path: Path
) -> None:
    fresh_server.args = ["--database", postgres_url]
    fresh_server.start()
    r = rid()
    with fresh_server.client() as api:
        first = granted(lease(api, "acquire", resource=r, holder="w1", ttlSeconds=30))
        held = lease(api, "acquire", resource=r, holder="w2")
        assert held.status_code == 409 and held.json()["data"]["outcome"] == "HELD"
        assert lease(api, "renew", resource=r, ownerToken=first["ownerToken"]).status_code == 200
        assert lease(api, "release", resource=r, ownerToken=first["ownerToken"]).status_code == 200
        assert granted(lease(api, "acquire", resource=r, holder="w2"))["fencingToken"] == 2
    assert not (fresh_server.data / "tenure.db").exists()  # the ledger is in PostgreSQL

    key = tenure("apikey", "create", "team-a", "--database", postgres_url)
    assert key.returncode == 0, key.stderr
    fresh_server.restart()  # state and tokens come back from the database
    with fresh_server.client(Authorization=f"Bearer {key.stdout.strip()}") as api:
        named = granted(lease(api, "acquire", resource="deploy:prod", holder="w1"))
        assert named["fencingToken"] == 1
        held = lease(api, "acquire", resource=r, holder="w3")
        assert held.status_code == 201  # another tenant's namespace: r is free there
    with fresh_server.client() as api:
        held = lease(api, "acquire", resource=r, holder="w3")
        assert held.status_code == 409, held.text  # w2 still holds r after the restart
        dids = [k["did"] for k in api.get("/api/v1/keys").json()["keys"]]
        size = int(api.get("/healthz").json()["data"]["ledger"]["treeSize"])

    out = tmp_path / "ledger.jsonl"  # exported while the server runs: a consistent snapshot
    exported = tenure(
        "export", "--out", str(out), "--keys", str(fresh_server.root / "keys"),
        TENURE_DATABASE=postgres_url,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    audited = tenure("audit", str(out), *(arg for did in dids for arg in ("--trust", did)))
    assert audited.returncode == 0, audited.stdout + audited.stderr
    with out.open("rb") as lines:
        report = audit(list(parse_lines(lines)), trusted_keys=dids)
    assert report.ok and report.entries == size


def test_several_workers_of_one_node_share_a_postgresql_ledger(
    fresh_server: Server, postgres_url: str
) -> None:
    fresh_server.args = ["--database", postgres_url, "--workers", "2"]
    fresh_server.start()
    r = rid()

    def one(n: int) -> int:
        with fresh_server.client() as api:  # a connection each: the kernel spreads them
            return lease(api, "acquire", resource=r, holder=f"h{n}", ttlSeconds=60).status_code

    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(one, range(100)))
    assert sorted(codes) == [201] + [409] * 99
    assert fresh_server.process is not None
    workers = subprocess.run(["pgrep", "-P", str(fresh_server.process.pid)], capture_output=True)
    assert len(workers.stdout.split()) == 2


def test_a_node_with_another_keys_folder_is_refused(
    fresh_server: Server, postgres_url: str, tmp_path: Path
) -> None:
    fresh_server.args = ["--database", postgres_url]
    fresh_server.start()
    other_keys = str(tmp_path / "other-keys")
    other = tenure("serve", "--port", "0", "--database", postgres_url, "--keys", other_keys)
    assert other.returncode == 2, other.stderr
    assert "keys folder differs from the one this database is served with" in other.stderr
    with fresh_server.client() as api:  # the serving node and its one key are untouched
        assert granted(lease(api, "acquire", resource=rid(), holder="w1"))["fencingToken"] == 1
        assert len(api.get("/api/v1/keys").json()["keys"]) == 1


def test_bad_database_options_are_refused_by_name(tmp_path: Path) -> None:
    bad = tenure("serve", "--port", "0", "--database", str(tmp_path / "x.db"))
    assert bad.returncode == 2 and "--database: must be a postgresql:// URL" in bad.stderr
    url = f"postgresql://tenure:s3cret@/nowhere?host={tmp_path}&connect_timeout=1"
    down = tenure("serve", "--port", "0", "--database", url, "--keys", str(tmp_path / "keys"))
    assert down.returncode == 2 and "cannot use the ledger database" in down.stderr
    assert "s3cret" not in down.stderr
    missing = tenure("export", "--out", str(tmp_path / "out.jsonl"), TENURE_DATABASE=url)
    assert missing.returncode == 1 and "s3cret" not in missing.stderr


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, which it stops and starts again."""
    server = PostgresServer().start()
    yield server
    server.stop()


def test_a_lost_database_is_503_unknown_and_the_node_recovers_by_itself(
    fresh_server: Server, own_postgres: PostgresServer
) -> None:
    fresh_server.args = ["--database", own_postgres.create_database("lost")]
    fresh_server.start()
    r = rid()
    with fresh_server.client() as api:
        first = granted(lease(api, "acquire", resource=r, holder="w1", ttlSeconds=60))
        own_postgres.pause()
        lost = lease(api, "acquire", resource=rid(), holder="w1")
        assert lost.status_code == 503, lost.text
        assert lost.json()["data"]["status"] == "unknown"
        # tenure's words for every caller: no database host, port or user; the cause is logged
        assert lost.json()["data"]["error"]["message"] == STORAGE_UNAVAILABLE
        health = api.get("/healthz")
        assert health.status_code == 503 and health.json()["data"]["storage"] == "unavailable"
        read = api.get("/api/v1/log/entries", params={"start": 0, "end": 1})
        assert read.status_code == 503 and read.json()["data"]["status"] == "unknown"
        own_postgres.resume()
        _until_healthy(api)  # no request needed: the sweeper reconnects and reloads
        assert lease(api, "acquire", resource=r, holder="w2").status_code == 409  # w1 holds r
        renewed = lease(api, "release", resource=r, ownerToken=first["ownerToken"])
        assert renewed.status_code == 200, renewed.text
        assert granted(lease(api, "acquire", resource=r, holder="w2"))["fencingToken"] == 2
        assert json.loads(api.get("/api/v1/log/checkpoint").text)["treeSize"] >= 3
    logged = fresh_server.log.read_text()
    assert "storage unavailable on POST /api/v1/lease/acquire: " in logged


def _until_healthy(api: httpx.Client) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if api.get("/healthz").status_code == 200:
            return
        time.sleep(0.1)  # polling a server's health, not making lease time pass
    raise AssertionError("the node did not recover after the database came back")
