"""The sweeper's expiries, in process with a fixed clock on a real SQLite file: what a sweep
costs in statements as the expiries grow, and the waiters of expired resources still served in
the sweep's transaction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ledger.lease.calls import LeaseCall
from tests.test_rules_in_process import Clock, acquire, kinds, run, service


def _statements_to_sweep(tmp_path: Path, leases: int) -> list[str]:
    """The SQL statements the writer runs to record ``leases`` expiries in one sweep."""
    counted: list[str] = []

    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            for n in range(leases):
                await svc.lease(acquire(f"r{n}", ttl_seconds=5))
            clock.now += 5_000
            svc.storage._writer.set_trace_callback(counted.append)  # type: ignore[attr-defined]
            await svc.durable(svc.sweep(clock.now))
            svc.storage._writer.set_trace_callback(None)  # type: ignore[attr-defined]
            assert kinds(svc).count("expire") == leases

    run(scenario)
    return counted


def test_a_sweep_writes_its_expiries_together_not_one_by_one(tmp_path: Path) -> None:
    few = len(_statements_to_sweep(tmp_path / "few", 10))
    many = len(_statements_to_sweep(tmp_path / "many", 70))
    per_expiry = (many - few) / 60
    assert per_expiry <= 1.1, f"{per_expiry:.1f} statements per expiry"  # its lease row's DELETE


def test_an_expiry_leaves_its_resource_row_alone_and_waiters_are_asked_once(
    tmp_path: Path,
) -> None:
    statements = _statements_to_sweep(tmp_path, 12)
    assert sum(s.startswith("DELETE FROM state") for s in statements) == 12
    assert not [s for s in statements if s.startswith(("INSERT INTO state", "UPDATE state"))]
    assert sum(" FROM waiters" in s for s in statements) == 1  # nobody waits: one read says so


def test_waiters_of_resources_expiring_together_are_served_in_the_sweep(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            for name in ("a", "b"):
                await svc.lease(acquire(name, holder="old", ttl_seconds=5))
            waiting = [
                asyncio.ensure_future(svc.lease(LeaseCall("wait", "t", name, holder="new")))
                for name in ("a", "b")
            ]
            await asyncio.sleep(0)
            await svc.durable(svc.committer.barrier())
            clock.now += 5_000
            await svc.durable(svc.sweep(clock.now))
            for future in waiting:
                served = await future
                assert (served.data["outcome"], served.data["holder"]) == ("GRANTED", "new")
                assert served.data["fencingToken"] == 2
            assert sorted(kinds(svc)[2:]) == ["acquire", "acquire", "expire", "expire"]
            times = [json.loads(leaf)["time"] for _, leaf in svc.storage.entries(0, 100)][2:]
            assert len(set(times)) == 1  # both expired and both granted at the sweep's time

    run(scenario)
