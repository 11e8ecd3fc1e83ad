"""The writer thread's CPU per lease event, without HTTP or an event loop.

Not a test: prints figures. Drives the :class:`~ledger.lease.decider.Decider` on a throw-away
SQLite ledger as the writer does for fresh acquires and prints the writer's CPU per event.
``--wal-frames`` skips checkpoints and prints WAL frames per event (decisions/0013); ``--processes
N`` runs N writers on one ledger, as a server's N workers do; ``--data``/``--keys`` append to a
copy of a kept (grown) ledger; ``--python-record`` records in Python (``native-record`` off).
For A/B figures the load does not blur, count instructions under callgrind (docs/performance.md).

    .venv/bin/python bench/writer_bench.py [--events 6000] [--batch 12] [--rounds 3] [--processes 1]
                                           [--wal-frames] [--data D --keys K] [--python-record]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import resource
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ledger.keys.keyring import NAMES_KEY, load_or_create_names_key  # noqa: E402
from ledger.keys.names import NameCodec  # noqa: E402
from ledger.lease.calls import LeaseCall, Limits  # noqa: E402
from ledger.lease.decider import Decider  # noqa: E402
from ledger.sqlite.backend import SQLiteStorage  # noqa: E402
from ledger.sqlite.checkpointer import Checkpointer  # noqa: E402
from ledger.sqlite.schema import DB_NAME  # noqa: E402
from ledger.writer.service import VERSIONS  # noqa: E402

START = 1_780_000_000_000
"""A fixed clock: each event one millisecond after the last."""


class Writer:
    """A decider and its storage, driven batch by batch as the writer thread drives them."""

    def __init__(self, data: Path, names_key: bytes, native: bool = True) -> None:
        limits = Limits()
        base = {"deterministic": True, "limits": limits.as_data(), "versions": VERSIONS}
        self.storage = SQLiteStorage.open(data, NameCodec(names_key))
        loop = asyncio.new_event_loop()
        self.decider = Decider(secrets.token_bytes(32), limits, base, loop, native=native)
        self.now = START
        self.tag = secrets.token_hex(4)

    def batch(self, calls: list[LeaseCall]) -> tuple[float, float]:
        """One batch: the CPU seconds of its prepares and of its transaction."""
        decider, storage = self.decider, self.storage
        started = time.thread_time()
        for call in calls:
            decider.prepare(call)
            storage.warm_lease(call.tenant, call.resource, call.holder, call.scope)
        opened = time.thread_time()
        with storage.transaction() as tx:
            decider.begin(tx)
            for call in calls:
                self.now += 1
                answer = decider.lease(call, self.now, None)
                assert answer is not None and answer.data["outcome"] == "GRANTED"
        decider.committed()
        return opened - started, time.thread_time() - opened

    def run(self, events: int, size: int, label: str) -> dict[str, float]:
        """``events`` fresh acquires in batches of ``size``: µs per event."""
        prepare = inside = 0.0
        before = resource.getrusage(resource.RUSAGE_THREAD)
        for first in range(0, events, size):
            calls = [_acquire(f"{label}-{self.tag}-{first + n}") for n in range(size)]
            spent = self.batch(calls)
            prepare, inside = prepare + spent[0], inside + spent[1]
        after = resource.getrusage(resource.RUSAGE_THREAD)
        done = (events + size - 1) // size * size
        return {
            "prepare": prepare / done * 1e6,
            "transaction": inside / done * 1e6,
            "user": (after.ru_utime - before.ru_utime) / done * 1e6,
            "system": (after.ru_stime - before.ru_stime) / done * 1e6,
        }


def _acquire(name: str) -> LeaseCall:
    return LeaseCall("acquire", "bench", name, holder="worker-1", ttl_seconds=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument(
        "--wal-frames",
        action="store_true",
        help="no checkpoints: print the WAL frames each event adds (the pages a commit syncs)",
    )
    parser.add_argument(
        "--python-record",
        action="store_true",
        help="entries written and hashed in Python (the native-record acceleration off)",
    )
    parser.add_argument("--data", type=Path, help="a kept ledger's data folder (a copy)")
    parser.add_argument("--keys", type=Path, help="its keys folder (the names key)")
    args = parser.parse_args(argv)
    if (args.data is None) != (args.keys is None):
        parser.error("--data and --keys go together")
    if args.keys is not None and not (args.keys / NAMES_KEY).is_file():
        parser.error(f"--keys: no {NAMES_KEY} in {args.keys}")
    if args.wal_frames:
        Checkpointer.start = lambda self: None  # type: ignore[method-assign]
    if args.data is not None:
        _write(args.data, load_or_create_names_key(args.keys), args, "")
        return 0
    names_key = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix="writer-bench-") as folder:
        SQLiteStorage.open(Path(folder), NameCodec(names_key)).close()  # the schema, once
        if args.processes == 1:
            _write(Path(folder), names_key, args, "")
            return 0
        fork = multiprocessing.get_context("fork")
        children = [
            fork.Process(target=_write, args=(Path(folder), names_key, args, f"process {n}: "))
            for n in range(args.processes)
        ]
        for child in children:
            child.start()
        for child in children:
            child.join()
        return max(child.exitcode or 0 for child in children)


def _write(folder: Path, names_key: bytes, args: argparse.Namespace, label: str) -> None:
    """One writer's rounds on the ledger in ``folder``, each printed."""
    writer = Writer(folder, names_key, not args.python_record)
    writer.run(600, args.batch, "warm")
    for round_ in range(args.rounds):
        start = _wal_start(writer) if args.wal_frames else None
        spent = writer.run(args.events, args.batch, f"r{round_}")
        total = spent["prepare"] + spent["transaction"]
        frames = (
            "" if start is None else f", {_wal_frames(writer, start) / args.events:.2f} WAL frames"
        )
        print(
            f"{label}events={args.events} batch={args.batch} writer CPU per event: "
            f"prepare {spent['prepare']:.1f} + transaction {spent['transaction']:.1f} = "
            f"{total:.1f} µs (user {spent['user']:.1f}, system {spent['system']:.1f}){frames}",
            flush=True,
        )
    writer.storage.close()


def _wal_start(writer: Writer) -> int:
    """With ``--wal-frames``: the WAL's frames so far (the ledger keeps growing across rounds)."""
    wal = writer.storage.path.with_name(DB_NAME + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _wal_frames(writer: Writer, start: int) -> float:
    """Frames the WAL grew by since ``start``: each is a page and its 24-byte header."""
    page = int(writer.storage._writer.execute("PRAGMA page_size").fetchone()[0])
    wal = writer.storage.path.with_name(DB_NAME + "-wal")
    return (wal.stat().st_size - max(start, 32)) / (page + 24)


if __name__ == "__main__":
    raise SystemExit(main())
