"""A stolen database gives no name back to a dictionary (docs/decisions/0010, addendum).

A workload with guessable names (``deploy:prod``, ``worker-1``, ``db:migrate``) runs through the
lease service on both backends; then an attacker holding the SQLite folder or a ``pg_dump``, but
not the names key, hashes every call a word list can make — the stored request digest's input
and every fingerprint — and looks for each digest anywhere in what was stolen. Nothing matches;
the same search with the key finds every one, so the search itself is not blind."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import sqlite3
from pathlib import Path

import psycopg

from ledger.backends import open_storage
from ledger.changes import AddWaiter
from ledger.keys.names import FINGERPRINT, REQUEST_INPUT
from ledger.lease.calls import LeaseCall, Limits
from ledger.writer.service import LeaseService
from tests import storage_util
from tests.names_key import NAMES
from tests.test_names_at_rest import database_bytes

location = storage_util.location  # the fixture, taken by name: every backend in turn

TENANT = "key/team-a"
WORDS = ["deploy:prod", "db:migrate", "worker-1", "worker-2", "build-42", "release", "nightly"]
WORDS += ["deploy:staging", "cron", "backup", "etl", "job-1"]
TTLS = (10, 30, 60)
CALLS = [
    LeaseCall("acquire", TENANT, "deploy:prod", "worker-1", 30, request_id="r1", scope="release",
              fingerprint="build-42"),
    LeaseCall("acquire", TENANT, "db:migrate", "worker-2", 60, request_id="r2", scope="nightly"),
]  # fmt: skip


def run_workload(location: Path | str) -> None:
    """The calls above, then the work completed and asked for again under its fingerprint."""
    storage = open_storage(location, names=NAMES)

    async def run() -> None:
        service = LeaseService(storage, b"s" * 32, Limits(), clock=lambda: 1_800_000_000_000)
        await service.start()
        first = [await service.lease(call) for call in CALLS]
        assert [a.data["outcome"] for a in first] == ["GRANTED", "GRANTED"]
        token = first[0].owner_token
        done = LeaseCall("complete", TENANT, "deploy:prod", owner_token=token, result={"ok": 1})
        assert (await service.lease(done)).data["outcome"] == "COMPLETED"
        again = await service.lease(CALLS[0])  # a replay of the stored request
        assert again.data.get("replayed") is True
        same = LeaseCall("acquire", TENANT, "deploy:prod", "worker-3", fingerprint="build-42")
        assert (await service.lease(same)).data["outcome"] == "COMPLETED"
        other = LeaseCall("acquire", TENANT, "deploy:prod", "worker-3", fingerprint="build-43")
        assert (await service.lease(other)).data["outcome"] == "CONFLICT"
        await service.stop()

    try:
        asyncio.run(run())
    finally:
        storage.close()


def guesses() -> set[bytes]:
    """Every acquire a word list can spell, as rule 12 digests it, and every word's
    fingerprint digest: what the attacker looks for."""
    found = {hashlib.sha256(word.encode()).digest() for word in WORDS}
    maybe = [None, *WORDS]
    for resource, holder, scope, fingerprint, ttl in itertools.product(
        WORDS, WORDS, maybe, maybe, TTLS
    ):
        call = LeaseCall("acquire", TENANT, resource, holder, ttl, scope=scope)
        call.fingerprint = fingerprint
        found.add(call.digest())
    return found


def stolen_digests(location: Path | str) -> set[bytes]:
    """Every 32-byte string in what was stolen: SQLite's bytes, or the hex of a pg_dump."""
    stolen = database_bytes(location)
    if isinstance(location, Path):
        return {stolen[at : at + 32] for at in range(len(stolen) - 31)}
    found: set[bytes] = set()
    for run in re.findall(rb"\\x([0-9a-f]{64,})", stolen):
        for at in range(0, len(run) - 63, 2):
            found.add(bytes.fromhex(run[at : at + 64].decode()))
    return found


def test_a_dictionary_finds_no_name_in_a_stolen_database(location: Path | str) -> None:
    run_workload(location)
    stolen = stolen_digests(location)
    dictionary = guesses()
    real = [call.digest() for call in CALLS] + [hashlib.sha256(b"build-42").digest()]
    assert set(real) <= dictionary  # the word list spells every call that was made
    assert dictionary & stolen == set()
    keyed = [NAMES.keyed(REQUEST_INPUT, TENANT, digest) for digest in real[:2]]
    keyed.append(NAMES.keyed(FINGERPRINT, TENANT, real[2]))
    assert set(keyed) <= stolen  # with the names key the same search finds them all


def carry_on(location: Path | str) -> None:
    """After a migration: both requests replay, the fingerprint still binds the lifecycle."""
    storage = open_storage(location, names=NAMES)

    async def run() -> None:
        service = LeaseService(storage, b"s" * 32, Limits(), clock=lambda: 1_800_000_000_001)
        await service.start()
        for call in CALLS:
            assert (await service.lease(call)).data.get("replayed") is True
        same = LeaseCall("acquire", TENANT, "deploy:prod", "worker-4", fingerprint="build-42")
        assert (await service.lease(same)).data["outcome"] == "COMPLETED"
        other = LeaseCall("acquire", TENANT, "deploy:prod", "worker-4", fingerprint="build-43")
        assert (await service.lease(other)).data["outcome"] == "CONFLICT"
        await service.stop()

    try:
        with storage.transaction() as tx:
            waiter = tx.waiter("w-old")
        asyncio.run(run())
    finally:
        storage.close()
    assert waiter is not None  # its stored digest was keyed in its sealed call
    assert waiter.call["digest"] == NAMES.keyed(REQUEST_INPUT, TENANT, CALLS[0].digest()).hex()


def rewind(location: Path | str) -> None:
    """Store the digests as a ledger before the keying step did (plain SHA-256), with a queued
    waiter's sealed call holding one, and its schema one step back."""
    storage = open_storage(location, names=NAMES)
    call = json.dumps({"call": {}, "digest": CALLS[0].digest().hex()})
    with storage.transaction() as tx:
        tx.apply(AddWaiter("w-old", TENANT, "db:migrate", "gone", call))
    storage.close()
    plain = [call.digest() for call in CALLS]
    updates = [("request_digest", NAMES.keyed(REQUEST_INPUT, TENANT, d), d) for d in plain]
    fingerprint = hashlib.sha256(b"build-42").digest()
    keyed = NAMES.keyed(FINGERPRINT, TENANT, fingerprint)
    updates += [(column, keyed, fingerprint) for column in ("fingerprint", "completed_fingerprint")]
    if isinstance(location, Path):
        with sqlite3.connect(location / "tenure.db") as conn:
            for column, new, old in updates:
                table = "idempotency" if column == "request_digest" else "state"
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (old, new))
            conn.execute("PRAGMA user_version = 6")
        return
    with psycopg.connect(location, autocommit=True) as conn:
        for column, new, old in updates:
            table = "idempotency" if column == "request_digest" else "resources"
            conn.execute(f"UPDATE {table} SET {column} = %s WHERE {column} = %s", (old, new))
        conn.execute("DELETE FROM schema_version WHERE version = 4")


def test_an_older_ledger_keys_its_digests_on_open_and_carries_on(location: Path | str) -> None:
    run_workload(location)
    rewind(location)
    assert guesses() & stolen_digests(location)  # what an older ledger gave a dictionary
    carry_on(location)  # opened with the names key: migrated
    assert guesses() & stolen_digests(location) == set()
