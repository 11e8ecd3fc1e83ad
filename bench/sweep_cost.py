"""The sweeper's cost per expired lease, without HTTP or an event loop.

Not a test: prints figures. Grants ``--events`` fresh leases on a throw-away SQLite ledger as the
writer does (``writer_bench.Writer``, a fixed clock), then, with ``--sweep``, records their
expiries in sweeps at a time past every TTL, as the sweeper's tick does. Seconds are noise on a
shared machine: count instructions under callgrind, four runs (two sizes, with and without
``--sweep``), the method and the figures in docs/performance.md ("Expiries: the sweep's cost").

    .venv/bin/python bench/sweep_cost.py [--events 600] [--sweep]
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from writer_bench import START, Writer  # noqa: E402

from ledger.keys.names import NameCodec  # noqa: E402
from ledger.lease import sweeper  # noqa: E402
from ledger.sqlite.backend import SQLiteStorage  # noqa: E402

TTL_MS = 60_000
"""The TTL of the bench's leases (``writer_bench``'s acquires)."""


def sweep_all(writer: Writer, now: int) -> tuple[int, int]:
    """Sweeps at ``now`` until one finds nothing: (sweeps, entries appended)."""
    decider, storage = writer.decider, writer.storage
    sweeps, before = 0, decider.recorder.tree.size
    while True:
        size = decider.recorder.tree.size
        with storage.transaction() as tx:
            decider.begin(tx)
            sweeper.sweep(decider.batch, now, 86_400_000)
        decider.committed()
        sweeps += 1
        if decider.recorder.tree.size == size:
            break
    return sweeps, decider.recorder.tree.size - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=600, help="leases granted (and expired)")
    parser.add_argument("--batch", type=int, default=8, help="grants per transaction")
    parser.add_argument("--sweep", action="store_true", help="record their expiries too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sweep-cost-") as folder:
        names_key = secrets.token_bytes(32)
        SQLiteStorage.open(Path(folder), NameCodec(names_key)).close()
        writer = Writer(Path(folder), names_key)
        granted = writer.run(args.events, args.batch, "lease")
        print(f"granted {args.events}: writer CPU {granted['transaction']:.1f} µs per grant")
        if args.sweep:
            started = time.thread_time()
            sweeps, appended = sweep_all(writer, writer.now + TTL_MS)
            spent = (time.thread_time() - started) / max(appended, 1) * 1e6
            print(f"swept {appended} expiries in {sweeps} sweeps: {spent:.1f} µs CPU per expiry")
            assert appended == writer.now - START, "every lease expires once"
        writer.storage.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
