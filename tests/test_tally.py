"""The request path's held counts and timings (``api/tally.py``) write exactly what direct calls
would: the same exposition, in one process and in prometheus-client's multiprocess mode, and
nothing before the loop's turn ends."""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from api.tally import Tally, observe_all

AMOUNTS = st.lists(
    st.one_of(
        st.floats(min_value=0, max_value=20, allow_nan=False),
        st.sampled_from([0.005, 0.01, 0.25, 10.0, math.inf, math.nan]),  # bounds, +Inf, NaN
    ),
    max_size=40,
)


def _pair() -> tuple[CollectorRegistry, Histogram, CollectorRegistry, Histogram]:
    mine, theirs = CollectorRegistry(), CollectorRegistry()
    labels = ["route"]
    return (
        mine,
        Histogram("t_seconds", "t", labels, registry=mine),
        theirs,
        Histogram("t_seconds", "t", labels, registry=theirs),
    )


@settings(max_examples=200, deadline=None)
@given(AMOUNTS)
def test_observing_all_at_once_writes_what_observing_each_does(amounts: list[float]) -> None:
    mine, held, theirs, direct = _pair()
    observe_all(held.labels("/a"), amounts)
    child = direct.labels("/a")
    for amount in amounts:
        child.observe(amount)
    assert _samples(mine) == _samples(theirs)


def _samples(registry: CollectorRegistry) -> list[str]:
    """The exposition's lines but the ``_created`` ones (each histogram's own creation time)."""
    return [
        line for line in generate_latest(registry).decode().splitlines() if "_created" not in line
    ]


def test_the_tally_writes_at_the_end_of_the_loop_turn() -> None:
    registry = CollectorRegistry()
    answers = Counter("a_total", "a", ["op"], registry=registry)
    timing = Histogram("t_seconds", "t", registry=registry)
    tally = Tally()

    def written() -> tuple[float | None, float | None]:
        return (
            registry.get_sample_value("a_total", {"op": "acquire"}),
            registry.get_sample_value("t_seconds_count"),
        )

    async def turn() -> tuple[tuple[float | None, float | None], ...]:
        for _ in range(3):
            tally.inc(answers.labels("acquire"))
            tally.observe(timing, 0.02)
        during = written()
        await asyncio.sleep(0)  # the turn ends: the flush scheduled with call_soon runs
        return during, written()

    during, after = asyncio.run(turn())
    assert during == (0.0, 0.0)
    assert after == (3.0, 3.0)
    assert registry.get_sample_value("t_seconds_sum") == pytest.approx(0.06)


def test_a_loop_that_ended_before_its_flush_does_not_hold_the_next_ones() -> None:
    """A loop closed right after answering (a test client's) leaves its flush unrun: what the
    next loop tallies is still written at the end of that loop's turn."""
    registry = CollectorRegistry()
    answers = Counter("a_total", "a", registry=registry)
    tally = Tally()
    first = asyncio.new_event_loop()

    def answer() -> None:
        first.stop()  # this turn is the loop's last: the flush it schedules never runs
        tally.inc(answers)

    first.call_soon(answer)
    first.run_forever()
    first.close()
    assert registry.get_sample_value("a_total") == 0.0

    async def turn() -> None:
        tally.inc(answers)
        await asyncio.sleep(0)

    asyncio.run(turn())
    assert registry.get_sample_value("a_total") == 2.0


def test_without_a_running_loop_the_tally_writes_at_once() -> None:
    registry = CollectorRegistry()
    answers = Counter("a_total", "a", registry=registry)
    Tally().inc(answers)
    assert registry.get_sample_value("a_total") == 1.0


def test_multiprocess_values_get_the_same_sums(tmp_path: Path) -> None:
    """In a child process with PROMETHEUS_MULTIPROC_DIR (as every worker of a multi-worker
    server): the memory-mapped values summed by the multiprocess collector match direct calls."""
    import subprocess

    script = """
import sys
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from api.tally import observe_all
amounts = [0.001, 0.02, 0.02, 0.3, 7.5, 100.0]
held = Histogram("held_seconds", "t")
direct = Histogram("direct_seconds", "t")
observe_all(held, amounts)
for amount in amounts:
    direct.observe(amount)
registry = CollectorRegistry()
MultiProcessCollector(registry)
text = generate_latest(registry).decode()
lines = sorted(line for line in text.splitlines() if not line.startswith("#"))
mine = [line.replace("held_", "X_") for line in lines if line.startswith("held_")]
theirs = [line.replace("direct_", "X_") for line in lines if line.startswith("direct_")]
assert mine == theirs and len(mine) > 10, (mine, theirs)
"""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(folder), "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
