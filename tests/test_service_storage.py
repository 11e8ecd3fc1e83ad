"""What happens at the storage edge: a failed commit is never a success, the state survives a
restart, and the server stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

import pytest

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.writer.service import LeaseService
from tests.conftest import Server, lease, rid
from tests.names_key import NAMES

SECRET = b"s" * 32
DISK_FULL = (
    "CREATE TRIGGER disk_full BEFORE INSERT ON entries BEGIN SELECT RAISE(ABORT, 'disk full'); END"
)


def operator(data: Path) -> sqlite3.Connection:
    """A second connection to the ledger file, as an operator (or a failing disk) would touch it."""
    return sqlite3.connect(data / "tenure.db", isolation_level=None)


def acquire(resource: str, holder: str = "w") -> LeaseCall:
    return LeaseCall(op="acquire", tenant="t", resource=resource, holder=holder)


def test_failed_commit_answers_unknown_leaves_nothing_and_recovers(tmp_path: Path) -> None:
    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        conn = operator(tmp_path)
        service = LeaseService(storage, SECRET)
        await service.start()
        granted = await service.lease(acquire("a"))
        assert granted.data["fencingToken"] == 1
        conn.execute(DISK_FULL)
        with pytest.raises(StorageUnavailable):
            await service.lease(acquire("b"))
        with pytest.raises(StorageUnavailable):  # still failing: refused, never a success
            await service.lease(acquire("c"))
        assert storage.tree_size() == 1  # nothing of the failed calls is on disk
        with storage.transaction() as tx:
            assert tx.resource("t", "a") is not None
            assert tx.resource("t", "b") is None and tx.resource("t", "c") is None
        conn.execute("DROP TRIGGER disk_full")  # the disk recovers
        for _ in range(100):
            if service.healthy:
                break
            await asyncio.sleep(0.01)
        again = await service.lease(acquire("a", holder="x"))
        assert again.data["outcome"] == "HELD"  # the reloaded state still has a's lease
        fresh = await service.lease(acquire("b"))
        assert fresh.data["ledger"]["logIndex"] == 1  # no gap where the refused batch was
        await service.stop()
        storage.close()
        conn.close()

    asyncio.run(scenario())


def test_state_and_tokens_survive_a_restart(tmp_path: Path) -> None:
    async def run(resource: str) -> int:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET)
        await service.start()
        answer = await service.lease(acquire(resource, holder=rid()))
        release = LeaseCall("release", "t", resource, owner_token=answer.owner_token)
        await service.lease(release)
        await service.stop()
        storage.close()
        return int(answer.data["fencingToken"])

    assert [asyncio.run(run("r")) for _ in range(3)] == [1, 2, 3]


def test_sigterm_stops_cleanly_and_keeps_every_event(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        r = rid()
        lease(api, "acquire", resource=r, holder="w", ttlSeconds=600)
        size = api.get("/healthz").json()["data"]["ledger"]["treeSize"]
    # uvicorn finishes the shutdown, then re-raises SIGTERM so the exit status says why it ended.
    assert fresh_server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in fresh_server.log.read_text()
    fresh_server.start()
    with fresh_server.client() as api:
        assert api.get("/healthz").json()["data"]["ledger"]["treeSize"] == size
        assert lease(api, "acquire", resource=r, holder="x").status_code == 409


def test_a_failed_sweep_recovers_and_records_the_expiry_again(tmp_path: Path) -> None:
    now = [1_800_000_000_000]

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        conn = operator(tmp_path)
        service = LeaseService(storage, SECRET, clock=lambda: now[0])
        await service.start()  # no runtime, so no periodic sweeper: the test sweeps by hand
        await service.lease(LeaseCall("acquire", "t", "r", holder="w", ttl_seconds=1))
        conn.execute(DISK_FULL)
        now[0] += 2000
        failed = service.sweep(now[0])  # nobody need await this commit; it is still noticed
        await asyncio.wait([failed])
        assert not service.healthy
        conn.execute("DROP TRIGGER disk_full")
        await service.sweep(now[0])  # nothing to reload: the next commit just tries again
        assert service.healthy
        kinds = [row[0] for row in conn.execute("SELECT json_extract(leaf, '$.kind') FROM entries")]
        assert kinds == ["acquire", "expire"]
        await service.stop()
        storage.close()
        conn.close()

    asyncio.run(scenario())


def test_one_batch_of_equal_calls_gets_distinct_owner_tokens_and_capacity_holds(
    tmp_path: Path,
) -> None:
    """Calls queued together are prepared together (tokens minted, resources read at once):
    each call gets its own owner token — one call object queued twice too — and a
    resource named by several calls of the batch is decided against what the earlier ones did."""

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, SECRET)
        await service.start()
        calls = [LeaseCall("acquire", "t", "pool", holder=f"w{n}", capacity=3) for n in range(4)]
        answers = await asyncio.gather(*(service.lease(c) for c in [*calls, calls[0]]))
        outcomes = [answer.data["outcome"] for answer in answers]
        assert outcomes.count("GRANTED") == 3, outcomes
        tokens = [a.owner_token for a in answers if a.data["outcome"] == "GRANTED"]
        assert len(set(tokens)) == 3
        for token in tokens:  # each token releases its own lease, once
            released = await service.lease(LeaseCall("release", "t", "pool", owner_token=token))
            assert released.data["outcome"] == "RELEASED"
        await service.stop()
        storage.close()

    asyncio.run(scenario())
