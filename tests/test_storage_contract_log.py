"""The storage contract (ledger/storage.py, docs/decisions/0005) outside the write transaction,
on every backend (tests/storage_util.py): the log's checkpoints, signing and API keys, the log's
id and fencing floor across a reopen, an export's snapshot, and what opening a backend gives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.backends import gauges, open_backend, writer_strategy
from ledger.changes import AppendEntry, PutCheckpoint, PutNodes, RaiseFencingFloor
from ledger.fencing_floor import Floor, FloorRefused, raise_floor
from ledger.storage import ApiKeyRecord, KeyRecord, Storage, StorageError
from tests import storage_util
from tests.names_key import NAMES
from tests.storage_util import CHECKPOINT, commit, seed

# The fixtures, taken by name: every test here runs on every backend.
location, reopen, storage = storage_util.location, storage_util.reopen, storage_util.storage


def test_checkpoints_latest_by_size_and_paged(storage: Storage) -> None:
    assert storage.latest_checkpoint() is None and storage.checkpoint(1) is None
    sizes = [1, 2, 4, 8]
    commit(storage, *(PutCheckpoint(n, bytes([n]) * 32, n, f"note {n}", "did:k") for n in sizes))
    commit(storage, PutCheckpoint(4, b"z" * 32, 99, "again", "did:other"))  # first one stays
    assert storage.checkpoint(4) == PutCheckpoint(4, bytes([4]) * 32, 4, "note 4", "did:k")
    assert storage.checkpoint(3) is None
    latest = storage.latest_checkpoint()
    assert latest is not None and latest.tree_size == 8
    assert [c.tree_size for c in storage.checkpoints(2, 2)] == [2, 4]
    assert [c.tree_size for c in storage.checkpoints(5, 10)] == [8]


def test_signing_keys_record_their_validity(storage: Storage) -> None:
    old = KeyRecord("did:key:old", b"o" * 32, "zOld", 1_000, None)
    new = KeyRecord("did:key:new", b"n" * 32, "zNew", 5_000, None)
    storage.record_key_use(old)
    storage.record_key_use(old)  # a restart with the same key changes nothing
    storage.record_key_use(new)
    assert storage.signing_keys() == [
        KeyRecord("did:key:old", b"o" * 32, "zOld", 1_000, 5_000),
        new,
    ]


def test_api_keys_by_digest(storage: Storage) -> None:
    record = ApiKeyRecord(b"k" * 32, "acme", "acme", 7)
    storage.add_api_key(record)
    assert storage.api_key_tenant(b"k" * 32) == "acme"
    assert storage.api_key_tenant(b"x" * 32) is None
    assert storage.api_keys() == [record]
    assert storage.revoke_api_key(b"k" * 32) is True
    assert storage.revoke_api_key(b"k" * 32) is False
    assert storage.api_key_tenant(b"k" * 32) is None


def test_log_id_is_fixed_at_creation(reopen: Callable[[], Storage]) -> None:
    first = reopen()
    seed(first)
    log_id = first.log_id()
    first.close()
    again = reopen()
    assert again.log_id() == log_id and len(log_id) >= 16
    assert again.tree_size() == 1  # and the data survived the reopen


def test_the_fencing_floor_only_rises_and_lasts(reopen: Callable[[], Storage]) -> None:
    first = reopen()
    seed(first)  # one entry; RESOURCE's highest token is 3
    assert first.fencing_floor() == 0
    with first.transaction() as tx:
        assert (tx.fencing_floor(), tx.highest_token()) == (0, 3)
        tx.apply(RaiseFencingFloor(10))
        tx.apply(RaiseFencingFloor(7))  # lower: changes nothing
        assert tx.fencing_floor() == 10
    first.close()
    again = reopen()
    assert again.fencing_floor() == 10
    assert raise_floor(again, 5) == Floor(entries=1, highest=10, floor=14)  # 10 + (5 - 1)
    assert raise_floor(again, 1) == Floor(entries=1, highest=14, floor=14)  # nothing lost
    with pytest.raises(FloorRefused, match="below the 1 entries"):
        raise_floor(again, 0)
    assert again.fencing_floor() == 14


def test_export_snapshot_does_not_move(storage: Storage) -> None:
    seed(storage)
    commit(storage, CHECKPOINT)
    storage.record_key_use(KeyRecord("did:key:a", b"a" * 32, "zA", 1, None))
    with storage.export_snapshot() as snap:
        assert snap.tree_size() == 1
        commit(storage, AppendEntry(1, b'{"e":1}'), PutNodes(((0, 1, b"m" * 32),)))
        commit(storage, PutCheckpoint(2, b"r" * 32, 3, "n2", "did:key:a"))
        assert snap.tree_size() == 1
        assert list(snap.entries(5)) == [(0, b'{"e":0}')]
        assert list(snap.checkpoints(10)) == [CHECKPOINT]
        assert snap.latest_checkpoint() == CHECKPOINT
        assert [k.did for k in snap.signing_keys()] == ["did:key:a"]
        assert snap.log_id() == storage.log_id()
    assert storage.tree_size() == 2


def test_each_backend_offers_the_writers_hooks_and_the_gauges(storage: Storage) -> None:
    """What the writer and the metrics take beyond the seam, checked for once on opening:
    SQLite lends its write lock to the event loop, PostgreSQL writes on a thread."""
    assert writer_strategy(storage) is storage and gauges(storage) is storage
    lent = writer_strategy(storage).turns() is not None
    assert lent == (type(storage).__module__ == "ledger.sqlite.backend")


def test_open_backend_refuses_a_ledger_first_served_with_other_keys(location: Path | str) -> None:
    served = open_backend(location, names=NAMES, keys="a" * 64)
    try:
        assert served.seal_turn.take() == 0.0  # the turn of this ledger, never sealed yet
        served.seal_turn.give(None)
        with pytest.raises(StorageError, match="keys folder"):
            open_backend(location, names=NAMES, keys="b" * 64)
    finally:
        served.close()
    open_backend(location, names=NAMES, keys="a" * 64).close()  # closed: nothing left held
