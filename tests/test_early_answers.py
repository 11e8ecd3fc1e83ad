"""Answers signed while their batch's commit is made durable, sent only once it is
(docs/decisions/0014): the committer shows a batch's results early, the lease route signs
meanwhile, and nothing leaves before the commit — which, if it fails, leaves nothing behind.

That is the writer thread's way, PostgreSQL's; on SQLite the event loop writes its own batches
on lent turns (docs/decisions/0017, ``tests/test_loop_turns.py``), so here SQLite is made to
write on a writer thread as PostgreSQL does."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.lease.provenance import Issuer
from ledger.sqlite.backend import SQLiteStorage
from ledger.storage import Storage, Transaction
from ledger.writer.service import LeaseService
from tests.conftest import rid
from tests.storage_util import acquire, running


@pytest.fixture(autouse=True)
def writer_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite without lent turns: the committer writes on its writer thread."""
    monkeypatch.setattr(SQLiteStorage, "turns", lambda self: None)


T0 = 1_800_000_000_000


class HeldCommit:
    """Installed on a storage, the next transaction's commit waits for :attr:`release` once
    its batch has run (and says so in :attr:`reached`), or fails there if :attr:`fail`."""

    def __init__(self, storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached, self.release = threading.Event(), threading.Event()
        self.fail = False
        real = storage.transaction
        held = [False]

        @contextmanager
        def transaction() -> Iterator[Transaction]:
            with real() as tx:
                yield tx
                if not held[0]:
                    held[0] = True
                    self.reached.set()
                    assert self.release.wait(10)
                    if self.fail:
                        raise OSError("the disk went away")  # before COMMIT: rolled back

        monkeypatch.setattr(storage, "transaction", transaction)


def test_the_answer_comes_before_the_commit_and_is_durable_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as (storage, service):
            held = HeldCommit(storage, monkeypatch)
            answer, durable = await service.lease_early(acquire("a"))
            assert answer.data["fencingToken"] == 1 and durable is not None
            assert await asyncio.to_thread(held.reached.wait, 10)  # the commit is held back
            assert not durable.done()
            assert storage.tree_size() == 0  # decided, not yet in the ledger for anyone else
            held.release.set()
            assert await service.durable(durable) is answer
            assert storage.tree_size() == 1

    asyncio.run(scenario())


def test_an_answer_whose_commit_fails_never_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as (storage, service):
            held = HeldCommit(storage, monkeypatch)
            held.fail = True
            answer, durable = await service.lease_early(acquire("a"))
            assert answer.data["ledger"]["logIndex"] == 0
            held.release.set()
            with pytest.raises(StorageUnavailable):
                await service.durable(durable)
            assert storage.tree_size() == 0
            for _ in range(100):  # the next commit succeeds: the service is healthy again
                again, durable = await service.lease_early(acquire("a"))
                await service.durable(durable)
                if service.healthy:
                    break
            assert again.data["ledger"]["logIndex"] == 0  # the failed answer left no gap
            assert again.data["fencingToken"] == 1  # and its token was never handed out

    asyncio.run(scenario())


def test_a_waiting_call_or_a_replay_comes_back_durable(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as (storage, service):
            call = LeaseCall(op="acquire", tenant="t", resource="r", holder="w", request_id="q")
            first, durable = await service.lease_early(call)
            assert durable is not None and first.data["fencingToken"] == 1
            await service.durable(durable)
            replay, durable = await service.lease_early(call)
            assert durable is None and replay.data.get("replayed") and replay.entry is not None
            assert storage.tree_size() == 1  # the replay appended nothing
            waiting = LeaseCall(op="acquire", tenant="t", resource="s", holder="w", wait_seconds=1)
            granted, durable = await service.lease_early(waiting)
            assert durable is None and granted.data["fencingToken"] == 1
            assert storage.tree_size() == 2  # and the grant it waited for is durable

    asyncio.run(scenario())


def _spy_signing(monkeypatch: pytest.MonkeyPatch, service: LeaseService) -> threading.Event:
    """Set once the route, having signed its answer, waits for that answer's commit while it
    is not yet durable."""
    signed, waiting = threading.Event(), threading.Event()
    pending: list[asyncio.Future[Any]] = []
    early, durable = service.lease_early, service.durable

    def spy(sign: Any) -> Any:  # the one answer writer, natively or in Python
        def signing(self: Issuer, *args: Any) -> Any:
            signed.set()
            return sign(self, *args)

        return signing

    async def answering(call: LeaseCall) -> Any:
        answer, future = await early(call)
        pending.extend([] if future is None else [future])
        return answer, future

    async def awaiting(future: asyncio.Future[Any] | None) -> Any:
        if future in pending and not future.done() and signed.is_set():
            waiting.set()
        return await durable(future)

    monkeypatch.setattr(Issuer, "encode_answer", spy(Issuer.encode_answer))
    monkeypatch.setattr(service, "lease_early", answering)
    monkeypatch.setattr(service, "durable", awaiting)
    return waiting


@pytest.mark.parametrize("fail", [False, True])
def test_the_route_signs_during_the_commit_and_sends_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys", sweep_interval=60)
    app = create_app(settings, lambda: T0)
    with TestClient(app, raise_server_exceptions=False) as client:
        service = app.state.edge.service
        storage = service.storage
        signed_and_waiting = _spy_signing(monkeypatch, service)
        held = HeldCommit(storage, monkeypatch)
        held.fail = fail
        answers: list[Any] = []
        body = json.dumps({"resource": rid(), "holder": "a"}).encode()
        caller = threading.Thread(
            target=lambda: answers.append(client.post("/api/v1/lease/acquire", content=body))
        )
        caller.start()
        try:  # signed while the commit is held, then waiting for it: nothing sent yet
            assert signed_and_waiting.wait(10)
            assert not held.release.is_set() and not answers
        finally:
            held.release.set()  # (a failed check must not leave the writer held)
            caller.join(10)
        (answer,) = answers
        if fail:
            assert answer.status_code == 503
            assert answer.json()["data"]["status"] == "unknown"
            assert storage.tree_size() == 0
        else:
            assert answer.status_code == 201 and answer.json()["data"]["fencingToken"] == 1
            assert answer.json()["data"]["ledger"]["treeSize"] == storage.tree_size()
