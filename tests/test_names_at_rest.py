"""Names at rest (docs/decisions/0010): a stolen database reveals no more than the
public ledger. Workloads with distinctive raw names run against real stores (a `tenure serve`
on a SQLite file; both backends through the storage seam), then every byte of the database —
SQLite's file, WAL and shared memory, a ``pg_dump`` of PostgreSQL — is searched for each name."""

from __future__ import annotations

import secrets
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from ledger.backends import open_storage
from ledger.changes import (
    AddWaiter,
    ArmDeadMan,
    Change,
    GrantWaiter,
    PutLease,
    PutResource,
    RememberRequest,
)
from ledger.keys.names import NameCodec, SealError
from ledger.storage import StorageError
from tests import storage_util
from tests.conftest import Server, lease, rid
from tests.names_key import NAMES
from tests.postgres import binaries

location = storage_util.location  # the fixture, taken by name: every backend in turn


def marks(*kinds: str) -> dict[str, str]:
    """A fresh distinctive raw name per kind (no other byte sequence could match it)."""
    return {kind: f"{kind}-{secrets.token_hex(8)}-zq" for kind in kinds}


def leaked(blob: bytes, names: dict[str, str]) -> list[str]:
    """The kinds whose raw name occurs anywhere in ``blob``."""
    return [kind for kind, name in names.items() if name.encode() in blob]


def folder_bytes(data: Path) -> bytes:
    """Every file of a SQLite ledger folder: the database, its WAL and shared memory, locks."""
    return b"".join(path.read_bytes() for path in sorted(data.iterdir()) if path.is_file())


def wait_for_waiter(db: Path) -> None:
    """Until the server has queued a waiter (its row committed)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT count(*) FROM waiters").fetchone()[0]:
                return
        time.sleep(0.02)
    raise AssertionError("the waiter was never queued")


def test_a_served_sqlite_ledger_holds_no_raw_name(fresh_server: Server) -> None:
    names = marks("resource", "holder", "scope", "request", "result", "waiter", "other")
    names["resource"] = rid(names["resource"])  # the anonymous tenant wants high entropy
    names["other"] = rid(names["other"])
    names["scope"] = rid(names["scope"])
    srv = fresh_server.start()
    with srv.client() as api:
        r, scope = names["resource"], names["scope"]
        body = {"holder": names["holder"], "scope": scope, "requestId": names["request"]}
        granted = lease(api, "acquire", resource=r, ttlSeconds=60, **body).json()["data"]
        replay = lease(api, "acquire", resource=r, ttlSeconds=60, **body).json()["data"]
        assert replay["fencingToken"] == granted["fencingToken"]  # the stored answer opens
        assert api.post(f"/api/v1/scopes/{scope}/heartbeat", json={"deadSeconds": 60}).is_success
        assert r in str(api.get(f"/api/v1/scopes/{scope}").json())  # names come back
        other = {"resource": names["other"], "holder": names["holder"], "ttlSeconds": 60}
        held = lease(api, "acquire", **other).json()["data"]
        waited: list[httpx.Response] = []

        def wait() -> None:
            with srv.client() as own:
                call = {"resource": names["other"], "holder": names["waiter"], "waitSeconds": 20}
                waited.append(own.post("/api/v1/lease/wait", json=call))

        waiter = threading.Thread(target=wait)
        waiter.start()
        wait_for_waiter(srv.data / "tenure.db")
        while_waiting = folder_bytes(srv.data)
        lease(api, "release", resource=names["other"], ownerToken=held["ownerToken"])
        waiter.join()
        assert waited[0].json()["data"]["holder"] == names["waiter"]
        result = {"report": names["result"]}
        done = lease(api, "complete", resource=r, ownerToken=granted["ownerToken"], result=result)
        assert done.is_success
        view = lease(api, "get", resource=r).json()["data"]
        assert names["result"] in str(view)  # the result is still answered
        running = folder_bytes(srv.data)
    srv.stop()
    assert leaked(while_waiting, names) == []
    assert leaked(running, names) == []
    assert leaked(folder_bytes(srv.data), names) == []


def workload(names: dict[str, str]) -> list[Change]:
    """Every name-bearing change, each carrying the raw names."""
    t, r, s = names["tenant"], names["resource"], names["scope"]
    answer = f'{{"resource": "{r}", "holder": "{names["holder"]}"}}'
    return [
        PutResource(t, r, 1, 1, 9_000, None, f'{{"name": "{names["result"]}"}}', 4_000, None),
        PutLease(t, r, 1, names["holder"], b"d" * 32, 5_000, s, 0),
        RememberRequest(t, names["request"], b"q" * 32, answer, 1_000),
        ArmDeadMan(t, s, 10, 100),
        AddWaiter("w-1", t, r, "worker", f'{{"holder": "{names["waiter"]}"}}'),
        AddWaiter("w-2", t, r, "worker", f'{{"holder": "{names["waiter"]}"}}'),
        GrantWaiter("w-2", answer),
    ]


KINDS = ("tenant", "resource", "holder", "scope", "request", "result", "waiter")


def database_bytes(location: Path | str) -> bytes:
    """SQLite: the folder's files; PostgreSQL: ``pg_dump`` of the database (every table)."""
    if isinstance(location, Path):
        return folder_bytes(location)
    dump = [str(binaries() / "pg_dump"), "--data-only", "--inserts", location]
    return subprocess.run(dump, check=True, capture_output=True).stdout


def test_every_change_is_stored_without_its_names(location: Path | str) -> None:
    names = marks(*KINDS)
    storage = open_storage(location, names=NAMES)
    try:
        with storage.transaction() as tx:
            for change in workload(names):
                tx.apply(change)
        with storage.transaction() as tx:  # and every read gives them back
            found = tx.resource(names["tenant"], names["resource"])
            assert found is not None and found.leases[0].holder == names["holder"]
            assert found.completion is not None and found.completion.result == {
                "name": names["result"]
            }
            assert tx.scope_resources(names["tenant"], names["scope"]) == [names["resource"]]
            assert list(tx.expired(5_000, 10)) == [(names["tenant"], names["resource"])]
            assert tx.due_scopes(110, 10) == [(names["tenant"], names["scope"])]
            request = tx.request(names["tenant"], names["request"])
            assert request is not None and request.answer["holder"] == names["holder"]
            assert [w.call["holder"] for w in tx.waiters(names["tenant"], names["resource"])] == [
                names["waiter"]
            ]
            granted = tx.waiter("w-2")
            assert granted is not None and granted.answer == {
                "resource": names["resource"],
                "holder": names["holder"],
            }
    finally:
        storage.close()
    assert leaked(database_bytes(location), names) == []


def test_another_names_key_is_refused_and_a_seal_opens_only_in_its_row(
    location: Path | str,
) -> None:
    """A server started with another names key (the file lost or swapped) refuses the ledger
    rather than find no row and fail to open every seal; a sealed value moved to another row,
    or read under another key, does not open."""
    storage = open_storage(location, names=NAMES)
    storage.close()
    with pytest.raises(StorageError, match="names key"):
        open_storage(location, names=NameCodec(b"\x01" * 32))
    sealed = NAMES.seal(b"leases", b"row-a", b"holder")
    assert NAMES.open(b"leases", b"row-a", sealed) == b"holder"
    with pytest.raises(SealError):
        NAMES.open(b"leases", b"row-b", sealed)  # moved to another row
    with pytest.raises(SealError):
        NameCodec(b"\x01" * 32).open(b"leases", b"row-a", sealed)


def test_without_the_names_key_only_the_state_is_refused(location: Path | str) -> None:
    """`tenure apikey`, `export` and key rotation open the ledger without the names key: what
    holds no names works, the state tables are refused with a reason."""
    open_storage(location, names=NAMES).close()
    tool = open_storage(location)
    try:
        assert tool.api_keys() == [] and tool.tree_size() == 0
        with pytest.raises(StorageError, match="names key"), tool.transaction() as tx:
            tx.resource("t", "r")
    finally:
        tool.close()
