"""Two workers sweeping one SQLite file at once — a leader's hand-over (docs/decisions/0009:
"harmless, since every sweep decides inside the write transaction") — expire each due lease
once, and the audit's rules pass over what they wrote. A real file, two services each with its
own connection and writer (as two workers have), and a fixed clock."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall
from ledger.writer.service import LeaseService
from tests.names_key import NAMES
from tests.test_entry_time_order import broken_rules, ledger_entries

SECRET = b"s" * 32
T = 1_900_000_000_000  # a fixed clock (ms)
LEASES = 40


def test_two_workers_sweeping_at_once_expire_each_lease_once(tmp_path: Path) -> None:
    now = [T]
    found: list[int] = []

    async def scenario() -> None:
        workers = [open_storage(tmp_path, names=NAMES) for _ in range(2)]
        services = [LeaseService(storage, SECRET, clock=lambda: now[0]) for storage in workers]
        for svc in services:
            await svc.start()
        for n in range(LEASES):
            call = LeaseCall("acquire", "t", f"job-{n}", holder=f"w{n}", ttl_seconds=5)
            await services[n % 2].lease(call)
        now[0] += 5_000
        for _ in range(3):  # both at once, three times: the later ones find nothing
            sweeps = [svc.durable(svc.sweep(now[0])) for svc in services]
            found.extend(await asyncio.gather(*sweeps))
        for svc in services:
            await svc.stop()
        for storage in workers:
            storage.close()

    asyncio.run(scenario())
    assert sum(found) == LEASES and found[2:] == [0, 0, 0, 0]
    entries = ledger_entries(tmp_path)
    kinds = [json.loads(leaf)["kind"] for _, leaf in entries]
    assert kinds.count("expire") == LEASES and len(entries) == 2 * LEASES, kinds
    assert broken_rules(entries) == []  # each lease expired once, after its expiry
