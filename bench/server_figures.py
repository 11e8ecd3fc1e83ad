"""What a load run did to the machine and to tenure's ledger lock: shared by the benches.

Not a test. :func:`machine_split` reads ``/proc/stat`` (Linux) around a run: the share of all cores
that was idle, waiting for the disk, in user and in system code. :func:`lock_figures` reads a
tenure server's ``/metrics`` (the SQLite ledger's lock, commit and checkpoint histograms summed over
its workers) into per-event figures: how long the write lock was held per event and how busy it
was, what the COMMIT's WAL sync took per group, how big the groups were, and the sweeper's share
of the lock (its own work, recording expiries; the group's COMMIT not counted in it).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Split:
    """Shares (0–100) of every core's time over a run."""

    idle: float = 0.0
    iowait: float = 0.0
    user: float = 0.0
    system: float = 0.0

    def __str__(self) -> str:
        return (
            f"machine: {self.idle:.0f}% idle, {self.iowait:.0f}% iowait, {self.user:.0f}% user,"
            f" {self.system:.0f}% system"
        )


def _ticks() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


@contextmanager
def machine_split() -> Iterator[Split]:
    """A :class:`Split` filled in when the ``with`` block ends (left at zero off Linux)."""
    split = Split()
    try:
        before = _ticks()
    except OSError:
        yield split
        return
    yield split
    spent = [b - a for a, b in zip(before, _ticks(), strict=False)]
    total = sum(spent[:8]) or 1  # user nice system idle iowait irq softirq steal
    split.user = 100 * (spent[0] + spent[1]) / total
    split.system = 100 * (spent[2] + spent[5] + spent[6]) / total
    split.idle = 100 * spent[3] / total
    split.iowait = 100 * spent[4] / total


@dataclass
class LockFigures:
    """Per-event figures of the ledger's write lock from one run's ``/metrics``."""

    events: float
    groups: float
    held_s: float
    commit_s: float
    swept_s: float = 0.0
    """The sweeper's own work under the lock (``tenure_sweep_seconds``): recording expiries."""

    def line(self, seconds: float) -> str:
        events, groups = max(self.events, 1), max(self.groups, 1)
        return (
            f"ledger lock: held {self.held_s / events * 1e6:,.0f} µs/event"
            f" ({100 * self.held_s / seconds:.0f}% of the run), COMMIT (WAL write and sync)"
            f" {self.commit_s / groups * 1e3:.2f} ms per group of {events / groups:.1f} events;"
            f" the sweeper's share {self.sweeper_share():.0f}% of the lock's held time"
        )

    def sweeper_share(self) -> float:
        """The sweeper's work as a share (0–100) of the time the lock was held."""
        return 100 * self.swept_s / self.held_s if self.held_s > 0 else 0.0


@dataclass
class GroupFigures:
    """Per-group figures of a server's group commits, on any backend, from ``/metrics``."""

    events: float
    groups: float
    commit_s: float
    """From asking for the ledger's lock to the durable COMMIT (the wait included)."""
    wait_s: float
    """The wait for the lock: another worker's, another node's, turn."""

    def line(self, seconds: float) -> str:
        events, groups = max(self.events, 1), max(self.groups, 1)
        held = self.commit_s - self.wait_s
        return (
            f"group commits: {self.groups / seconds:,.0f}/s of {events / groups:.1f} events;"
            f" per group {self.wait_s / groups * 1e3:.2f} ms waiting for the lock,"
            f" {held / groups * 1e3:.2f} ms from the lock to the durable COMMIT"
            f" ({100 * held / seconds:.0f}% of the run)"
        )


def grown(before: dict[str, float], after: dict[str, float]) -> Callable[[str], float]:
    """How much a sample grew between two :func:`scrape` results (0 where neither has it)."""
    return lambda name: after.get(name, 0.0) - before.get(name, 0.0)


def group_figures(before: dict[str, float], after: dict[str, float]) -> GroupFigures:
    """The group commits' figures between two :func:`scrape` results of one server."""
    grew = grown(before, after)
    return GroupFigures(
        events=grew("tenure_commit_batch_size_sum"),
        groups=grew("tenure_commit_batch_size_count"),
        commit_s=grew("tenure_commit_duration_seconds_sum"),
        wait_s=grew("tenure_ledger_lock_wait_seconds_sum"),
    )


def scrape(url: str) -> dict[str, float]:
    """The server's ``/metrics`` samples (prometheus-client's parser), label sets summed per
    sample name."""
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


def lock_figures(before: dict[str, float], after: dict[str, float]) -> LockFigures:
    """The lock's figures between two :func:`scrape` results of one SQLite-backed server."""
    grew = grown(before, after)
    return LockFigures(
        events=grew("tenure_commit_batch_size_sum"),
        groups=grew("tenure_commit_batch_size_count"),
        held_s=grew("tenure_sqlite_lock_held_seconds_sum"),
        commit_s=grew("tenure_sqlite_commit_seconds_sum"),
        swept_s=grew("tenure_sweep_seconds_sum"),
    )
