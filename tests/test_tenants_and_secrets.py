"""Tenants never see each other (DESIGN §3.1), and secrets never reach the disk or the logs
(DESIGN §2.14)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import ROOT, Server, lease, rid


def create_key(data: Path, name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "api", "apikey", "create", name, "--data", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def mint(client: httpx.Client) -> str:
    minted = client.post("/api/v1/namespaces")
    assert minted.status_code == 201 and minted.json()["data"]["entropyBits"] == 256
    return str(minted.json()["data"]["namespace"])


def test_tenants_are_isolated(fresh_server: Server) -> None:
    fresh_server.start()  # `apikey create` needs an existing ledger; the server sees new keys
    key_a = create_key(fresh_server.data, "team-a")
    key_b = create_key(fresh_server.data, "team-b")
    with fresh_server.client() as api:
        ns = mint(api)
        callers = [
            {"headers": {"Authorization": f"Bearer {key_a}"}, "body": {}},
            {"headers": {"Authorization": f"Bearer {key_b}"}, "body": {}},
            {"headers": {"Authorization": f"Bearer {key_a}"}, "body": {"tenantId": "sub"}},
            {"headers": {}, "body": {"namespace": ns}},
            {"headers": {"Tenure-Namespace": mint(api)}, "body": {}},
        ]
        for caller in callers:
            body = {"resource": "deploy:prod", "holder": "w", **caller["body"]}
            response = api.post("/api/v1/lease/acquire", json=body, headers=caller["headers"])
            assert response.status_code == 201, response.text
            assert response.json()["data"]["fencingToken"] == 1
        again = api.post(
            "/api/v1/lease/acquire",
            json={"resource": "deploy:prod", "holder": "x"},
            headers={"Authorization": f"Bearer {key_a}"},
        )
        assert again.status_code == 409


def test_wrong_api_key_is_401_and_require_api_key_refuses_others(fresh_server: Server) -> None:
    fresh_server.args = ["--require-api-key"]
    fresh_server.start()
    key = create_key(fresh_server.data, "ops")
    with fresh_server.client() as api:
        body = {"resource": rid(), "holder": "w"}
        bad = api.post(
            "/api/v1/lease/acquire", json=body, headers={"Authorization": "Bearer tnr_nope"}
        )
        assert bad.status_code == 401 and bad.json()["data"]["error"]["code"] == "unauthorized"
        assert api.post("/api/v1/lease/acquire", json=body).status_code == 401
        ns = api.post("/api/v1/lease/acquire", json={**body, "namespace": "ns_" + "a" * 43})
        assert ns.status_code == 401
        good = api.post(
            "/api/v1/lease/acquire", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        assert good.status_code == 201


def test_rate_limit_answers_429_with_retry_after(fresh_server: Server) -> None:
    fresh_server.args = ["--rate-limit", "5"]
    fresh_server.start()
    with fresh_server.client() as api:
        codes = [lease(api, "get", resource=rid()).status_code for _ in range(30)]
        assert codes.count(200) >= 10 and 429 in codes
        limited = lease(api, "get", resource=rid())
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1


def test_secrets_never_reach_disk_or_logs(fresh_server: Server) -> None:
    fresh_server.start()
    key = create_key(fresh_server.data, "acme")
    secrets: list[str] = [key]
    with fresh_server.client() as api:
        ns = mint(api)
        secrets.append(ns)
        fingerprint = "fp-" + rid()
        secrets.append(fingerprint)
        headers = {"Authorization": f"Bearer {key}"}
        body = {"resource": "invoice:1", "holder": "w", "fingerprint": fingerprint}
        granted = api.post("/api/v1/lease/acquire", json=body, headers=headers).json()["data"]
        secrets.append(granted["ownerToken"])
        lease(
            api, "renew", resource="invoice:1", ownerToken=granted["ownerToken"]
        )  # anonymous: LOST
        ns_lease = lease(api, "acquire", resource="job", holder="w", namespace=ns, requestId="r1")
        secrets.append(ns_lease.json()["data"]["ownerToken"])
        password = "hunter2-" + rid()
        done = api.post(
            "/api/v1/lease/complete",
            json={
                "resource": "invoice:1",
                "ownerToken": granted["ownerToken"],
                "result": {"password": password},
            },
            headers=headers,
        )
        assert done.status_code == 200
        secrets.append(password)
        scope = rid("scope")  # in the anonymous tenant a scope name is a capability
        lease(api, "acquire", resource=rid(), holder="w", scope=scope)
        assert api.get(f"/api/v1/scopes/{scope}").status_code == 200
        assert api.post(f"/api/v1/scopes/{scope}/release", json={}).status_code == 200
        log_only = [scope]  # names are kept in the database (they are answered back), never logged
    fresh_server.stop()
    files = [
        path for path in fresh_server.root.rglob("*") if path.is_file() and "keys" not in path.parts
    ]
    assert any(path.name == "tenure.db" for path in files)
    for path in files:
        content = path.read_bytes()
        for secret in secrets + (log_only if path == fresh_server.log else []):
            assert secret.encode() not in content, f"{secret[:8]}… found in {path.name}"
    assert "/api/v1/scopes/[scope]" in fresh_server.log.read_text()
