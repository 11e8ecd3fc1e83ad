"""A revoked API key gets nothing through a wait it queued before the revoke, and one key of a
tenant can be rotated out without cutting the tenant off (`tenure apikey rotate` / `revoke ID`).

Run against a real `tenure serve --workers 2` on a SQLite folder: the waiter's worker, the
worker that frees the slot and the process that revokes the key are separate processes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.backends import open_storage
from ledger.lease.calls import KeyRevoked, LeaseCall, Limits
from ledger.lease.tokens import secret_digest
from ledger.storage import ApiKeyRecord
from ledger.writer.service import LeaseService
from tests import storage_util
from tests.conftest import ROOT, Server
from tests.names_key import NAMES
from tests.test_names_at_rest import wait_for_waiter

RESOURCE = "deploy:prod"


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def key_id(key: str) -> str:
    """The id `apikey list` shows: the first 12 hex digits of the key's SHA-256."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()[:12]


def new_key(action: str, data: Path) -> str:
    made = tenure("apikey", action, "team-a", "--data", str(data))
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def queue_wait(srv: Server, key: str, answers: list[httpx.Response]) -> threading.Thread:
    """A `lease/wait` with ``key`` in a thread of its own, once its waiter row is committed."""

    def wait() -> None:
        with srv.client(**bearer(key)) as own:
            body = {"resource": RESOURCE, "holder": "leaked", "waitSeconds": 30}
            answers.append(own.post("/api/v1/lease/wait", json=body))

    thread = threading.Thread(target=wait)
    thread.start()
    wait_for_waiter(srv.data / "tenure.db")
    return thread


def refused_soon(thread: threading.Thread, answers: list[httpx.Response]) -> None:
    """The waiter was answered 401 at once (not at its 30 s deadline), without a grant."""
    thread.join(timeout=10)
    assert not thread.is_alive(), "the revoked key's waiter was not answered"
    answer = answers[0]
    assert answer.status_code == 401, answer.text
    error = answer.json()["data"]["error"]
    assert error["code"] == "unauthorized" and "revoked" in error["message"]
    assert "ownerToken" not in answer.text


def acquire(api: httpx.Client, key: str) -> dict[str, object]:
    body = {"resource": RESOURCE, "holder": "keeper", "ttlSeconds": 60}
    answer = api.post("/api/v1/lease/acquire", json=body, headers=bearer(key))
    assert answer.status_code == 201, answer.text
    data: dict[str, object] = answer.json()["data"]
    return data


def test_a_revoked_keys_queued_wait_is_refused_and_nothing_is_granted(
    fresh_server: Server,
) -> None:
    fresh_server.args = ["--workers", "2"]
    srv = fresh_server.start()
    keeper = new_key("create", srv.data)
    leaked = [new_key("rotate", srv.data) for _ in range(2)]  # the same tenant, other keys
    with srv.client() as api:
        held = acquire(api, keeper)
        assert held["fencingToken"] == 1
        answers: list[httpx.Response] = []
        thread = queue_wait(srv, leaked[0], answers)
        assert (
            tenure("apikey", "revoke", key_id(leaked[0]), "--data", str(srv.data)).returncode == 0
        )
        freed = api.post(
            "/api/v1/lease/release",
            json={"resource": RESOURCE, "ownerToken": held["ownerToken"]},
            headers=bearer(keeper),
        )
        assert freed.status_code == 200, freed.text
        refused_soon(thread, answers)
        held = acquire(api, keeper)  # free: the revoked waiter was never granted it
        assert held["fencingToken"] == 2

        answers = []
        thread = queue_wait(srv, leaked[1], answers)
        assert (
            tenure("apikey", "revoke", key_id(leaked[1]), "--data", str(srv.data)).returncode == 0
        )
        folders = ["--data", str(srv.data), "--keys", str(srv.root / "keys")]
        forced = tenure("lease", "revoke", RESOURCE, "--reason", "stuck", "--api-key-name",
                        "team-a", *folders)  # fmt: skip
        assert forced.returncode == 0, forced.stderr  # another process frees the slot
        refused_soon(thread, answers)
        assert acquire(api, keeper)["fencingToken"] == 3
        page = api.get("/api/v1/log/entries").json()
    kinds = [e["entry"]["kind"] for e in page.get("data", page)["entries"]]
    assert kinds.count("acquire") == 3  # the keeper's three; none for the revoked keys


def test_rotate_then_revoke_one_key_by_id_keeps_the_tenant(fresh_server: Server) -> None:
    srv = fresh_server.start()
    data = str(srv.data)
    old = new_key("create", srv.data)
    new = new_key("rotate", srv.data)
    listed = tenure("apikey", "list", "--data", data).stdout.splitlines()
    assert [line.split("\t")[2] for line in listed] == [key_id(old), key_id(new)]
    ambiguous = tenure("apikey", "revoke", "team-a", "--data", data)
    assert ambiguous.returncode == 2
    assert key_id(old) in ambiguous.stderr and "--all" in ambiguous.stderr
    with srv.client() as api:
        held = acquire(api, new)  # both keys act for one tenant: the same resource
        assert tenure("apikey", "revoke", key_id(old), "--data", data).returncode == 0
        gone = time.monotonic()
        while acquire_status(api, old) != 401:
            assert time.monotonic() - gone < 1.5, "the revoked key still works"
            time.sleep(0.05)
        body = {"resource": RESOURCE, "ownerToken": held["ownerToken"]}
        renewed = api.post("/api/v1/lease/renew", json=body, headers=bearer(new))
        assert renewed.status_code == 200, renewed.text
    assert tenure("apikey", "revoke", "team-a", "--data", data).returncode == 0  # its only key
    assert tenure("apikey", "list", "--data", data).stdout == ""
    unknown = tenure("apikey", "rotate", "team-b", "--data", data)
    assert unknown.returncode == 1 and "no API key named 'team-b'" in unknown.stderr
    bad = tenure("apikey", "revoke", "sha256:xyz", "--data", data)
    assert bad.returncode == 2 and "8..64 hex digits" in bad.stderr


def acquire_status(api: httpx.Client, key: str) -> int:
    body = {"resource": "other:" + key[-8:], "holder": "w"}
    return api.post("/api/v1/lease/acquire", json=body, headers=bearer(key)).status_code


def test_a_revoked_keys_wait_is_refused_when_the_lease_before_it_expires(
    fresh_server: Server,
) -> None:
    """The issue's reproduction: the holder's lease runs out (the sweeper serves the queue)
    after the only key of the tenant was revoked by name."""
    fresh_server.args = ["--workers", "2"]
    srv = fresh_server.start()
    key = new_key("create", srv.data)
    with srv.client(**bearer(key)) as api:
        body = {"resource": RESOURCE, "holder": "keeper", "ttlSeconds": 2}
        assert api.post("/api/v1/lease/acquire", json=body).status_code == 201
        answers: list[httpx.Response] = []
        thread = queue_wait(srv, key, answers)
        assert tenure("apikey", "revoke", "team-a", "--data", str(srv.data)).returncode == 0
        refused_soon(thread, answers)
        page = api.get("/api/v1/log/entries").json()
    kinds = [e["entry"]["kind"] for e in page.get("data", page)["entries"]]
    assert kinds.count("acquire") == 1, kinds


def test_a_revoked_keys_mcp_lease_wait_is_refused(fresh_server: Server) -> None:
    """The same over MCP's `lease_wait` at /mcp: the tool call is an error naming the revoke,
    with no ownerToken, and the slot goes on to the keeper."""
    pytest.importorskip("mcp")
    from tests.test_mcp_http import _drive

    srv = fresh_server.start()
    keeper = new_key("create", srv.data)
    leaked = new_key("rotate", srv.data)
    results: list[Any] = []

    async def wait(client: Any) -> None:
        args = {"resource": RESOURCE, "holder": "agent", "waitSeconds": 30}
        results.append(await client.call_tool("lease_wait", args))

    with srv.client(**bearer(keeper)) as api:
        held = acquire(api, keeper)
        thread = threading.Thread(target=_drive, args=(srv.url, wait), kwargs=bearer(leaked))
        thread.start()
        wait_for_waiter(srv.data / "tenure.db")
        assert tenure("apikey", "revoke", key_id(leaked), "--data", str(srv.data)).returncode == 0
        body = {"resource": RESOURCE, "ownerToken": held["ownerToken"]}
        assert api.post("/api/v1/lease/release", json=body).status_code == 200
        thread.join(timeout=10)
        assert not thread.is_alive(), "the revoked key's MCP wait was not answered"
        assert acquire(api, keeper)["fencingToken"] == 2
    text = str(results[0].content)
    assert results[0].is_error and "revoked" in text and "own_" not in text


location = storage_util.location  # the fixture, taken by name: every backend in turn


def test_the_transaction_reads_the_key_and_refuses_its_waiter(location: Path | str) -> None:
    """In-process on both backends, a fixed clock: a waiter whose key is revoked while it
    waits is refused with KeyRevoked when the slot frees, and the next waiter gets it."""
    storage = open_storage(location, names=NAMES)
    key, other = (secret_digest(f"tnr_{n}") for n in ("leaked", "kept"))
    for digest in (key, other):
        storage.add_api_key(ApiKeyRecord(digest, "team-a", "team-a", 0))
    tenant = "key/team-a"

    async def run() -> None:
        service = LeaseService(storage, b"s" * 32, Limits(), clock=lambda: 1_800_000_000_000)
        await service.start()
        held = await service.lease(LeaseCall("acquire", tenant, RESOURCE, "keeper"))
        waits = [
            asyncio.ensure_future(service.lease(LeaseCall(
                "wait", tenant, RESOURCE, holder, wait_seconds=30, key_digest=digest.hex()
            )))
            for holder, digest in (("leaked", key), ("kept", other))
        ]  # fmt: skip
        while storage.queued_waiters() < 2:  # both queued (committed) before the revoke
            await asyncio.sleep(0.01)
        with storage.transaction() as tx:
            assert tx.api_key_tenant(key) == "team-a"
        assert storage.revoke_api_key(key)
        with storage.transaction() as tx:
            assert tx.api_key_tenant(key) is None and tx.api_key_tenant(other) == "team-a"
        token = held.owner_token
        await service.lease(LeaseCall("release", tenant, RESOURCE, owner_token=token))
        with pytest.raises(KeyRevoked):
            await waits[0]
        granted = await waits[1]
        assert granted.data["holder"] == "kept" and granted.data["fencingToken"] == 2
        await service.stop()

    try:
        asyncio.run(run())
        kinds = [json.loads(entry)["kind"] for _, entry in storage.entries(0, 100)]
        assert kinds == ["acquire", "release", "acquire"]
    finally:
        storage.close()
