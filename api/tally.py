"""Per-request counts and timings, written to Prometheus once per event-loop turn.

Under several workers each prometheus-client ``inc`` takes a lock, a ``getpid`` and a write to a
memory-mapped file: ~30 µs of the loop per lease request (docs/performance.md). A :class:`Tally`
holds the increments and writes them in one ``call_soon`` callback after the turn's other
requests: one ``inc`` per counter and one per touched bucket.

Nothing is lost or reordered: the same increments reach the same values a turn later; a scrape
writes what is held first; without a running loop they are written at once. The histogram's sum
and buckets are what ``Histogram.observe`` would write (``tests/test_tally.py`` compares the
exposition); a client whose histograms lack those parts gets ``observe`` per value instead.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections import Counter as Counts
from typing import Any


class Tally:
    """Held increments of labelled counter children and observations of histogram children."""

    def __init__(self) -> None:
        self._counts: dict[Any, int] = {}
        self._observed: dict[Any, list[float]] = {}
        self._scheduled_on: asyncio.AbstractEventLoop | None = None

    def inc(self, child: Any) -> None:
        """``child.inc()``, in the loop's next callback."""
        counts = self._counts
        counts[child] = counts.get(child, 0) + 1
        self._schedule()

    def observe(self, child: Any, amount: float) -> None:
        """``child.observe(amount)``, in the loop's next callback."""
        held = self._observed.get(child)
        if held is None:
            self._observed[child] = [amount]
        else:
            held.append(amount)
        self._schedule()

    def flush(self) -> None:
        """Write everything held (each counter once, each histogram's sum once and each of its
        touched buckets once)."""
        self._scheduled_on = None
        counts, observed = self._counts, self._observed
        self._counts, self._observed = {}, {}
        for child, count in counts.items():
            child.inc(count)
        for child, amounts in observed.items():
            observe_all(child, amounts)

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to wait for: now
            self.flush()
            return
        if self._scheduled_on is not loop:  # not yet, or on a loop that ended before it ran
            self._scheduled_on = loop
            loop.call_soon(self.flush)


def observe_all(child: Any, amounts: list[float]) -> None:
    """``child.observe(a)`` for every ``a`` in ``amounts``, as one write to the sum and one to
    each bucket that gets any (``observe`` puts a value in the first bucket whose upper bound is
    at least the value)."""
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    if bounds is None or buckets is None or total is None:
        for amount in amounts:
            child.observe(amount)
        return
    total.inc(sum(amounts))
    top = bounds[-1]  # +Inf: a NaN is in no bucket, as observe leaves it
    touched = Counts(bisect_left(bounds, amount) for amount in amounts if amount <= top)
    for index, count in touched.items():
        buckets[index].inc(count)
