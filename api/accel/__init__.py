"""The server's accelerations, each optional and switched in one place (``TENURE_ACCEL``).

Each one writes the same bytes, with the same durability, as the reference path it stands in
for; a test per acceleration compares the two. ``TENURE_ACCEL`` is ``all`` (the default),
``none``, or a comma-separated list of the names in :data:`ACCELERATIONS`, so the bench can
measure each on and off (docs/performance.md).
"""

from __future__ import annotations

import gc

ACCELERATIONS = (
    "native-answer",
    "native-record",
    "orjson",
    "hot-route",
    "hot-protocol",
    "gc-tuning",
)
"""native-answer: ``ledger._native`` writes answers; native-record: it writes and hashes ledger
entries and keeps the Merkle frontier; orjson: reads flat request bodies;
hot-route: :mod:`api.accel.hot_route` answers the lease routes; hot-protocol:
:mod:`api.accel.hot_protocol` answers them from uvicorn's protocol, under the ASGI app;
gc-tuning: fewer collections."""


def parse_accel(text: str) -> frozenset[str]:
    """The accelerations ``text`` names; ValueError naming the unknown ones."""
    names = {part.strip() for part in text.split(",")} - {""}
    if names == {"all"}:
        return frozenset(ACCELERATIONS)
    if names <= {"none"}:
        return frozenset()
    unknown = sorted(names - set(ACCELERATIONS))
    if unknown:
        choices = ", ".join(("all", "none", *ACCELERATIONS))
        raise ValueError(f"unknown acceleration {', '.join(unknown)}: choose from {choices}")
    return frozenset(names)


def tune_gc() -> None:
    """Every answer allocates thousands of short-lived, acyclic objects; with CPython's default
    thresholds the cycle collector runs several times per request and rescans the long-lived
    state. Freeze what start-up built and collect young objects far less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)
