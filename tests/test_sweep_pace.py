"""The sweeper's pace: a sweep says how many due resources it found, and the next comes sooner
while expiries come fast, so no group of the ledger's lock carries a whole tick of them.

Pure arithmetic for the pace; a real SQLite file and a fixed clock for the count; the
supervisor's waits read from its own loop, with ``asyncio.sleep`` recorded, not slept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ledger.lease.sweeper import SWEEP_SHARE, next_sweep_in
from ledger.writer.supervisor import Supervised
from tests.test_rules_in_process import Clock, acquire, run, service


@pytest.mark.parametrize(
    ("found", "seconds", "expected"),
    [
        (0, 0.1, 0.1),  # nothing due: the interval
        (SWEEP_SHARE, 0.1, 0.1),  # a share per interval: the interval
        (300, 0.0, 0.1),  # the first sweep (nothing to measure a rate over): the interval
        (300, 0.1, SWEEP_SHARE * 0.1 / 300),  # 3,000 a second: a share every ~21 ms
        (SWEEP_SHARE * 2, 0.1, 0.05),
        (100_000, 0.1, 0.01),  # never sooner than a tenth of the interval
        (SWEEP_SHARE + 1, 10.0, 0.1),  # a slow trickle over a long wait: never later than it
    ],
)
def test_the_next_sweep_comes_sooner_only_while_expiries_come_fast(
    found: int, seconds: float, expected: float
) -> None:
    assert next_sweep_in(found, seconds, 0.1) == pytest.approx(expected)


def test_a_sweep_says_how_many_due_resources_it_found(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        async with service(tmp_path, clock) as svc:
            for n in range(7):
                await svc.lease(acquire(f"r{n}", ttl_seconds=5))
            await svc.lease(acquire("later", ttl_seconds=60))
            assert await svc.durable(svc.sweep(clock.now)) == 0
            clock.now += 5_000
            assert await svc.durable(svc.sweep(clock.now)) == 7
            assert await svc.durable(svc.sweep(clock.now)) == 0  # recorded once

    run(scenario)


def test_a_task_waits_what_its_last_run_asked_and_its_interval_after_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    answers: list[float | Exception | None] = [0.02, None, RuntimeError("down"), 0.03]
    real_sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) > len(answers):
            raise asyncio.CancelledError
        await real_sleep(0)

    async def step() -> float | None:
        answer = answers[len(waits) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def scenario() -> None:
        monkeypatch.setattr(asyncio, "sleep", recorded)
        task = Supervised("sweeper", step, 0.1)
        task.start()
        with pytest.raises(asyncio.CancelledError):
            assert task._task is not None
            await task._task

    asyncio.run(scenario())
    # first the interval; then what each run asked (None: the interval); after the failure the
    # backoff (twice the interval), then the interval's doubling ends with the next success
    assert waits == [0.1, 0.02, 0.1, 0.2, 0.03]
