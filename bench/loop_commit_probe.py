"""The event loop writing its own batches (docs/decisions/0017) against the way before it.

Not a test: prints figures. The probe is a ``tenure serve`` whose processes load
``bench/probe_site/sitecustomize.py`` so ``SQLiteStorage.turns`` answers ``None``: every batch is
written by the writer thread, as before 0017. With ``--against ask-at-once`` it is the way before
docs/decisions/0018 instead: lent turns, but the lock asked for before the loop's backlog runs.
Alternated fresh servers under ``bench/vs_etcd.py``'s load, each run printed by its ``show``;
the rounds it served: docs/performance.md.

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


PINNED = "1c50508"
"""The last commit whose writer internals ``ask-at-once`` and ``bench/sequencer_probe.py`` patch
(their figures were taken there or before): later commits moved them, so both refuse to run on
anything newer."""


def refuse_if_moved() -> None:
    """Exit, saying where to run the probe, when the internals it patches are gone from this
    checkout."""
    from ledger.writer import committer

    if not hasattr(committer, "_prepare"):
        raise SystemExit(
            f"this probe patches writer internals that moved after {PINNED}: run it from a"
            f" checkout of {PINNED} (git worktree add /tmp/probe {PINNED})"
        )


def hook_workers() -> None:
    """In a probe server's process (``bench/probe_site/sitecustomize.py``): no lent turns, or
    lent turns asked for at once."""
    if os.environ.get(MODE_ENV) == "ask-at-once":
        _ask_at_once()
        return
    from ledger.sqlite.backend import SQLiteStorage

    setattr(SQLiteStorage, "turns", lambda self: None)  # noqa: B010


def _ask_at_once() -> None:
    from ledger.writer import committer

    def put(self: committer.GroupCommitter, item: Any) -> None:
        if self._turns is None:
            self._queue.put(item)
            return
        committer._prepare([item])  # type: ignore[attr-defined]  # as of PINNED
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
    if args.against == "ask-at-once":
        refuse_if_moved()
    args.threads = 2  # vs_etcd.wrk's
    probe = {
        MODE_ENV: args.against,
        "PYTHONPATH": f"{ROOT / 'bench' / 'probe_site'}{os.pathsep}{ROOT / 'bench'}",
    }
    alternate(args, args.against, probe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
