"""Entries' times never go backwards in index order (DESIGN §6), even when two writers share one
ledger file and one's clock is behind (several workers, an admin CLI, PostgreSQL nodes): a
decision is taken at no earlier time than the last entry already in the log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall
from ledger.log.text import iso
from ledger.writer.service import LeaseService
from tests.names_key import NAMES
from verify.export_records import event_of
from verify.invariants import Rules

SECRET = b"s" * 32
T = 1_900_000_000_000  # a fixed clock (ms): the writer "behind" reads T, the other T + 5 s


def call(op: str, resource: str, **fields: Any) -> LeaseCall:
    return LeaseCall(op=op, tenant="t", resource=resource, holder="w", **fields)


def test_a_writer_whose_clock_is_behind_never_dates_an_entry_before_the_last(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        ahead = LeaseService(open_storage(tmp_path, names=NAMES), SECRET, clock=lambda: T + 5000)
        behind = LeaseService(open_storage(tmp_path, names=NAMES), SECRET, clock=lambda: T)
        await ahead.start()
        await behind.start()
        await ahead.lease(call("acquire", "a", ttl_seconds=30))
        granted = await behind.lease(call("acquire", "b", ttl_seconds=30))
        assert granted.data["expiresAt"] == iso(T + 5000 + 30_000)  # decided at the log's time
        owner = str(granted.owner_token)
        await behind.lease(call("release", "b", owner_token=owner))
        await ahead.lease(call("acquire", "c", ttl_seconds=30))
        await behind.lease(call("acquire", "d", ttl_seconds=30))
        await ahead.stop()
        await behind.stop()

    asyncio.run(scenario())
    entries = ledger_entries(tmp_path)
    times = [json.loads(leaf)["time"] for _, leaf in entries]
    assert len(times) == 5 and times == sorted(times), times
    assert broken_rules(entries) == []  # the audit's rules pass over the shared ledger


def ledger_entries(data: Path) -> list[tuple[int, bytes]]:
    """Every entry of the ledger in ``data``, read by a storage of its own."""
    storage = open_storage(data, names=NAMES)
    try:
        return storage.entries(0, storage.tree_size())
    finally:
        storage.close()


def broken_rules(entries: list[tuple[int, bytes]]) -> list[tuple[int | None, str, str]]:
    """The lease rules ``tenure audit`` would find broken in ``entries`` (none: all kept)."""
    found: list[tuple[int | None, str, str]] = []
    rules = Rules(lambda *f: found.append(f), lambda *f: None)
    for index, leaf in entries:
        event = event_of(index, leaf, lambda *f: found.append(f))
        assert event is not None
        rules.apply(event)
    return found
