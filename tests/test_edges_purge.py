"""A completed result is purged once its lifecycle ends: not kept in the state
database after the resource's lifecycle, even if nobody touches the resource again."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from ledger.backends import open_storage
from ledger.keys import sealing
from ledger.lease.calls import LeaseCall, Limits
from ledger.writer.service import LeaseService
from tests.names_key import NAMES

SECRET = b"s" * 32
START = 1_800_000_000_000


def stored_results(data: Path) -> list[object]:
    """The results stored in the resources' rows, opened (they are sealed at rest)."""
    with sqlite3.connect(data / "tenure.db") as conn:
        rows = conn.execute("SELECT tenant, name, result FROM state WHERE result IS NOT NULL")
        return [NAMES.open(sealing.RESOURCE_RESULT, t + n, r).decode() for t, n, r in rows]


def test_a_completed_result_is_purged_when_its_lifecycle_ends(tmp_path: Path) -> None:
    now = [START]

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        limits = Limits(lifecycle_seconds=60)
        service = LeaseService(storage, SECRET, limits=limits, clock=lambda: now[0])
        await service.start()
        call = LeaseCall("acquire", "t", "r", holder="w", fingerprint="job")
        token = (await service.lease(call)).owner_token
        done = LeaseCall("complete", "t", "r", owner_token=token, result={"v": "kept-until"})
        await service.lease(done)
        await service.durable(service.committer.barrier())
        assert any("kept-until" in str(r) for r in stored_results(tmp_path))
        now[0] = START + 59_000
        service.sweep(now[0])
        await service.durable(service.committer.barrier())
        assert any("kept-until" in str(r) for r in stored_results(tmp_path))  # still in its life
        now[0] = START + 60_000
        service.sweep(now[0])
        await service.durable(service.committer.barrier())
        assert not any("kept-until" in str(r) for r in stored_results(tmp_path))
        await service.stop()
        storage.close()

    asyncio.run(scenario())


def test_the_purge_survives_a_restart(tmp_path: Path) -> None:
    now = [START]

    async def run(step: str) -> None:
        storage = open_storage(tmp_path, names=NAMES)
        limits = Limits(lifecycle_seconds=60)
        service = LeaseService(storage, SECRET, limits=limits, clock=lambda: now[0])
        await service.start()
        if step == "complete":
            call = LeaseCall("acquire", "t", "r", holder="w")
            token = (await service.lease(call)).owner_token
            done = LeaseCall("complete", "t", "r", owner_token=token, result="kept-until")
            await service.lease(done)
        else:
            now[0] = START + 61_000
            service.sweep(now[0])
        await service.durable(service.committer.barrier())
        await service.stop()
        storage.close()

    asyncio.run(run("complete"))
    assert any("kept-until" in str(r) for r in stored_results(tmp_path))
    asyncio.run(run("sweep"))
    assert not any("kept-until" in str(r) for r in stored_results(tmp_path))
