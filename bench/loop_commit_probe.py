"""The event loop writing its own batches (docs/decisions/0017), before and after (issue 10).

Not a test: prints figures. This began as a probe — the loop running its batches on lent turns,
patched into an unchanged server — measured beside the default ``tenure serve`` before the
design was built (docs/performance.md, twelfth round). Now that it is the default, the probe is
the way before it: a ``tenure serve`` whose processes load ``bench/probe_site/sitecustomize.py``,
which makes ``SQLiteStorage.turns`` answer ``None``, so every batch is written by the committer's
writer thread while the loop signs the answers during the COMMIT (0014), as PostgreSQL's are.

With ``--against ask-at-once`` the probe is the way before docs/decisions/0018 instead: lent
turns, but the first unit after a turn asks the helper for the lock at once, not once the loop
has run the callbacks it already had.

Alternated fresh servers with ``bench/vs_etcd.py``'s load; each run printed by its ``show``:
rate, p99, server CPU per request, the machine's idle share, the ledger lock's figures.

    .venv/bin/python bench/loop_commit_probe.py [--duration 10] [--rounds 5]
                                                [--against writer-thread|ask-at-once]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

MODE_ENV = "TENURE_PROBE_LOOP_COMMIT"
"""Set in the probe server's environment: the way it is measured against."""
WAYS = ("writer-thread", "ask-at-once")


def hook_workers() -> None:
    """In a probe server's process (``bench/probe_site/sitecustomize.py``): no lent turns, or
    lent turns asked for at once."""
    if os.environ.get(MODE_ENV) == "ask-at-once":
        _ask_at_once()
        return
    from ledger.sqlite.backend import SQLiteStorage

    setattr(SQLiteStorage, "turns", lambda self: None)  # noqa: B010


def _ask_at_once() -> None:
    from ledger import committer

    def put(self: committer.GroupCommitter, item: Any) -> None:
        if self._turns is None:
            self._queue.put(item)
            return
        committer._prepare([item])
        self._units.append(item)
        if not self._asked:
            self._asked = True
            self._ask()

    setattr(committer.GroupCommitter, "_put", put)  # noqa: B010


def main() -> int:
    from vs_etcd import alternate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", choices=WAYS, default=WAYS[0])
    args = parser.parse_args()
    args.threads = 2  # vs_etcd.wrk's
    probe = {
        MODE_ENV: args.against,
        "PYTHONPATH": f"{ROOT / 'bench' / 'probe_site'}{os.pathsep}{ROOT / 'bench'}",
    }
    alternate(args, args.against, probe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
