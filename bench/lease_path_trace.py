"""Follow one acquire's requestId (a first grant, then its replay) through ledger/: the modules
whose functions run for it, in order (the backends, the committer, metrics and the LRU left
out), how many, and how often the path returns to a module it had left. Not a test.

    .venv/bin/python bench/lease_path_trace.py
"""

import asyncio
import itertools
import sys
import tempfile
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall
from ledger.writer.service import LeaseService
from tests.names_key import NAMES

ROOT = str(Path(__file__).resolve().parent.parent)
SKIP = (
    "ledger/sqlite/",
    "ledger/postgres/",
    "ledger/writer/committer.py",
    "ledger/writer/units.py",
    "ledger/metrics.py",
    "ledger/lru.py",
)
seq: list[str] = []


def tracer(frame: FrameType, event: str, arg: object) -> None:
    if event == "call":
        f = frame.f_code.co_filename
        if f.startswith(ROOT + "/ledger/"):
            rel = f[len(ROOT) + 1 :]
            if not rel.startswith(SKIP) and (not seq or seq[-1] != rel):
                seq.append(rel)
    return None


async def main() -> None:
    folder = tempfile.mkdtemp()
    storage = open_storage(Path(folder), names=NAMES)
    service = LeaseService(storage, b"s" * 32, clock=lambda: 1_800_000_000_000)
    await service.start()
    await service.lease(
        LeaseCall("acquire", "t", "warm", holder="w", request_id="warm-0123456789abcdef")
    )
    call = LeaseCall("acquire", "t", "r", holder="w", request_id="req-0123456789abcdef0123")
    for label in ("first", "replay"):
        seq.clear()
        sys.setprofile(tracer)
        await service.lease(call)
        sys.setprofile(None)
        left, back = set(), 0
        for prev, cur in itertools.pairwise(seq):
            left.add(prev)
            back += cur in left
        print(
            f"{label}: {len(set(seq))} modules, {len(seq)} visits, {back} returns to one left;",
            " -> ".join(m.removeprefix("ledger/").removesuffix(".py") for m in seq),
        )
    await service.stop()
    storage.close()


asyncio.run(main())
