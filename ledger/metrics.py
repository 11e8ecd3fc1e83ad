"""Process-wide Prometheus metrics of the ledger floor, and the one-line hooks that feed them.

prometheus-client keeps its metrics per process. Under several worker processes set
``PROMETHEUS_MULTIPROC_DIR`` (an empty folder, before the workers start): the counters and
histograms here then live in memory-mapped files there and ``/metrics`` sums them over every
worker (prometheus-client's multiprocess mode); see docs/operations.md.
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram

LOCK_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
"""Seconds: how long the ledger's write lock was waited for and held, on one scale to compare."""

COMMIT_BATCH = Histogram(
    "tenure_commit_batch_size",
    "Units of work carried by one group commit (one durable storage transaction).",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
COMMIT_SECONDS = Histogram(
    "tenure_commit_duration_seconds",
    "Time one group commit took, from queuing its batch to its durable COMMIT: the wait for"
    " the ledger's write lock included (tenure_ledger_lock_wait_seconds is that part).",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
LOCK_WAIT_SECONDS = Histogram(
    "tenure_ledger_lock_wait_seconds",
    "Time a group commit waited for the ledger's write lock (held by another worker process,"
    " another node or `tenure lease revoke`) before its transaction opened.",
    buckets=LOCK_BUCKETS,
)
SQLITE_COMMIT_SECONDS = Histogram(
    "tenure_sqlite_commit_seconds",
    "Time SQLite's COMMIT of a group commit took: its WAL frames written and synced"
    " (synchronous=FULL), under the ledger's write lock — the disk's share of the lock.",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
SQLITE_LOCK_HELD_SECONDS = Histogram(
    "tenure_sqlite_lock_held_seconds",
    "Time the ledger's write lock was held once taken: a group commit's transaction (its"
    " decisions, rows and COMMIT), a RESTART checkpoint, another writer's turn in this process.",
    buckets=LOCK_BUCKETS,
)
SQLITE_CHECKPOINT_SECONDS = Histogram(
    "tenure_sqlite_checkpoint_seconds",
    "Time one WAL checkpoint took: mode=passive beside the writers, mode=restart under the"
    " ledger's write lock (every writer waits for it).",
    ["mode"],
    buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
)
SWEEP_SECONDS = Histogram(
    "tenure_sweep_seconds",
    "Time one sweep's own work took inside its group commit's transaction, under the ledger's"
    " write lock: the expiries and dead-man releases it records, the old requests it forgets"
    " (the group's COMMIT is not in it).",
    buckets=LOCK_BUCKETS,
)
COMMIT_FAILURES = Counter(
    "tenure_commit_failures_total", "Group commits that failed (the outcome was unknown)."
)


def commit_started() -> float:
    """A monotonic timestamp to hand to :func:`commit_done`."""
    return time.perf_counter()


def commit_done(batch: int, started: float, opened: float, ended: float, ok: bool) -> None:
    """One group commit of ``batch`` units of work, asked for at ``started``, holding the
    ledger's write lock from ``opened`` (0: it never did), ended at ``ended`` (``ok``: durably;
    the duration includes the wait for the lock). Observed after the lock is given back."""
    if opened:
        LOCK_WAIT_SECONDS.observe(opened - started)
    COMMIT_BATCH.observe(batch)
    COMMIT_SECONDS.observe(ended - started)
    if not ok:
        COMMIT_FAILURES.inc()


def sqlite_committed(seconds: float) -> None:
    """SQLite's COMMIT took ``seconds`` (``ledger/sqlite/backend.py``)."""
    SQLITE_COMMIT_SECONDS.observe(seconds)


def sqlite_lock_held(seconds: float) -> None:
    """The ledger's write lock was held ``seconds`` (``ledger/sqlite/writelock.py``)."""
    SQLITE_LOCK_HELD_SECONDS.observe(seconds)


def sqlite_checkpointed(mode: str, seconds: float) -> None:
    """A WAL checkpoint (``passive`` or ``restart``) took ``seconds``
    (``ledger/sqlite/checkpointer.py``)."""
    SQLITE_CHECKPOINT_SECONDS.labels(mode).observe(seconds)


def swept(seconds: float) -> None:
    """One sweep's work took ``seconds`` in its transaction (``ledger/lease/sweeper.py``)."""
    SWEEP_SECONDS.observe(seconds)
