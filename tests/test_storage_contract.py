"""The storage contract (ledger/storage.py, docs/decisions/0005), run against every backend.

Each backend is opened on a real store (tests/storage_util.py: SQLite a real file, PostgreSQL a
fresh database on the real server the suite starts); a backend is one entry in ``BACKENDS`` there
and passes every test here unchanged. Here: the write transaction's changes and the reads a
decision makes; the log, keys and opening in ``test_storage_contract_log.py``, group commit in
``test_storage_contract_commit.py``.
"""

from __future__ import annotations

import pytest

from ledger.changes import (
    AddWaiter,
    AppendEntry,
    ArmDeadMan,
    Change,
    DisarmDeadMan,
    DropLease,
    DropWaiter,
    DropWorkerWaiters,
    ForgetRequests,
    GrantWaiter,
    PutLease,
    PutNodes,
    PutResource,
    RememberRequest,
    SetLeaseExpiry,
)
from ledger.lease.leases import Lease, Resource
from ledger.storage import RequestRecord, Storage, WaiterRecord
from tests import storage_util
from tests.storage_util import (
    CHECKPOINT,
    LEASE,
    REQUEST,
    RESOURCE,
    commit,
    expected_resource,
    seed,
)

# The fixtures, taken by name: every test here runs on every backend.
location, reopen, storage = storage_util.location, storage_util.reopen, storage_util.storage


def test_every_change_reads_back_inside_and_outside_the_transaction(storage: Storage) -> None:
    with storage.transaction() as tx:
        for change in (AppendEntry(0, b'{"e":0}'), PutNodes(((0, 0, b"n" * 32),)), RESOURCE):
            tx.apply(change)
        tx.apply(LEASE)
        tx.apply(REQUEST)
        tx.apply(ArmDeadMan("t", "job", 30_000, 1_000))
        tx.apply(CHECKPOINT)
        assert (tx.tree_size(), tx.node(0, 0)) == (1, b"n" * 32)
        assert tx.resource("t", "r") == expected_resource()
        assert tx.request("t", "req-1") is not None
        assert storage.tree_size() == 0  # nothing is visible outside before the commit
    assert (storage.tree_size(), storage.node(0, 0), storage.entry(0)) == (1, b"n" * 32, b'{"e":0}')
    assert storage.entries(0, 5) == [(0, b'{"e":0}')]
    assert storage.latest_checkpoint() == CHECKPOINT
    with storage.transaction() as tx:  # and in the next transaction, as committed
        assert tx.resource("t", "r") == expected_resource()
        assert tx.request("t", "req-1") == RequestRecord(b"q" * 32, {"outcome": "GRANTED"}, 1_000)
        assert tx.due_scopes(30_999, 10) == [] and tx.due_scopes(31_000, 10) == [("t", "job")]


def test_lease_changes_renew_and_drop(storage: Storage) -> None:
    seed(storage)
    commit(storage, SetLeaseExpiry("t", "r", 3, 8_000))
    with storage.transaction() as tx:
        assert tx.resource("t", "r") == expected_resource(expires_at=8_000)
        tx.apply(DropLease("t", "r", 3))
        found = tx.resource("t", "r")
        assert found is not None and found.leases == []
        assert tx.resource("t", "other") is None
    with storage.transaction() as tx:
        found = tx.resource("t", "r")
        assert found is not None and found.leases == []  # the drop was committed


def test_requests_are_forgotten_and_dead_man_switches_disarmed(storage: Storage) -> None:
    later = RememberRequest("t", "req-2", b"r" * 32, '{"outcome": "RELEASED"}', 3_000)
    commit(storage, REQUEST, later, ArmDeadMan("t", "job", 10, 1))
    commit(storage, ForgetRequests(2_000), DisarmDeadMan("t", "job"))
    with storage.transaction() as tx:
        assert tx.request("t", "req-1") is None
        record = tx.request("t", "req-2")
        assert record is not None and record.answer == {"outcome": "RELEASED"}
        assert (record.digest, record.created_at) == (b"r" * 32, 3_000)
    with storage.transaction() as tx:
        assert tx.request("t", "req-2") is not None
        assert tx.due_scopes(2**62, 10) == []  # disarmed


def test_the_sweeper_and_scope_queries(storage: Storage) -> None:
    """What is due and who is in a scope, found by index (docs/decisions/0006)."""
    other = PutResource("t", "s", 1, 1, 9_000, None, None, None, None)
    commit(storage, RESOURCE, LEASE, other, PutLease("t", "s", 1, "v", b"e" * 32, 7_000, None, 1))
    commit(storage, PutLease("t", "r", 4, "x", b"f" * 32, 6_000, "job", 2))
    commit(storage, ArmDeadMan("t", "job", 10, 100), ArmDeadMan("u", "late", 10, 500))
    with storage.transaction() as tx:
        assert list(tx.expired(4_999, 10)) == []
        assert list(tx.expired(6_000, 10)) == [("t", "r")]  # two leases, one resource
        due = tx.expired(5_000, 10)
        assert list(due) == [("t", "r")]  # one lease due, its resource whole: both its leases
        assert [(lease.holder, lease.expires_at) for lease in due[("t", "r")].leases] == [
            (LEASE.holder, LEASE.expires_at),
            ("x", 6_000),
        ]
        assert (due[("t", "r")].max_token, due[("t", "r")].lifecycle_end) == (
            RESOURCE.max_token,
            RESOURCE.lifecycle_end,
        )
        assert sorted(tx.expired(7_000, 10)) == [("t", "r"), ("t", "s")]
        assert len(tx.expired(7_000, 1)) == 1
        assert tx.due_scopes(109, 10) == [] and tx.due_scopes(110, 10) == [("t", "job")]
        assert sorted(tx.due_scopes(510, 10)) == [("t", "job"), ("u", "late")]
        assert tx.scope_resources("t", "job") == ["r"] and tx.scope_resources("u", "job") == []
    assert [storage.live_leases(now) for now in (5_999, 6_000, 7_000)] == [2, 1, 0]
    with storage.transaction() as tx:
        assert tx.ended_lifecycles(8_999, 10) == []
        assert sorted(tx.ended_lifecycles(9_000, 10)) == [("t", "r"), ("t", "s")]  # both at 9_000
        assert len(tx.ended_lifecycles(9_000, 1)) == 1


def test_waiters_queue_in_order_and_are_granted_collected_or_purged(storage: Storage) -> None:
    call = '{"call": {"op": "wait"}, "digest": null}'
    commit(storage, AddWaiter("w1", "t", "r", "A", call), AddWaiter("w2", "t", "r", "B", call))
    commit(storage, AddWaiter("w3", "t", "r", "A", call), AddWaiter("x", "t", "other", "B", call))
    with storage.transaction() as tx:
        assert [w.waiter_id for w in tx.waiters("t", "r")] == ["w1", "w2", "w3"]
        assert tx.waiters("t", "r")[1] == WaiterRecord(
            "w2", "B", {"call": {"op": "wait"}, "digest": None}, None
        )
        tx.apply(GrantWaiter("w1", '{"outcome": "GRANTED"}'))
        assert [w.waiter_id for w in tx.waiters("t", "r")] == ["w2", "w3"]  # granted: not queued
        found = tx.waiter("w1")
        assert found is not None and found.answer == {"outcome": "GRANTED"}
        assert sorted(tx.waiter_workers()) == ["A", "B"]
        tx.apply(DropWaiter("w1"))
        tx.apply(DropWorkerWaiters("B"))
        assert tx.waiter("w1") is None and tx.waiter_workers() == ["A"]
        assert [w.waiter_id for w in tx.waiters("t", "r")] == ["w3"]
    assert storage.queued_waiters() == 1  # w3: the others were granted, dropped or purged


def test_a_failed_transaction_leaves_nothing(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.apply(AppendEntry(0, b"{}"))
        tx.apply(RESOURCE)
        raise RuntimeError("the decision failed half-way")
    assert storage.tree_size() == 0 and storage.entry(0) is None
    with storage.transaction() as tx:
        assert tx.resource("t", "r") is None
    seed(storage)  # the backend is usable afterwards
    assert storage.tree_size() == 1


@pytest.mark.parametrize(
    "rewrite", [AppendEntry(0, b'{"forged":1}'), PutNodes(((0, 0, b"x" * 32),))]
)
def test_entries_and_nodes_are_append_only(storage: Storage, rewrite: Change) -> None:
    seed(storage)
    with pytest.raises(Exception), storage.transaction() as tx:  # noqa: B017
        tx.apply(rewrite)
    assert (storage.entry(0), storage.node(0, 0)) == (b'{"e":0}', b"n" * 32)


def test_missing_node_is_a_key_error(storage: Storage) -> None:
    with pytest.raises(KeyError):
        storage.node(0, 0)
    with pytest.raises(KeyError), storage.transaction() as tx:
        tx.node(3, 1)


def test_many_resources_read_at_once_as_one_by_one(storage: Storage) -> None:
    keys = [("t", f"r{n}") for n in range(70)] + [("u", "r1"), ("t", "missing"), ("t", "r3")]
    with storage.transaction() as tx:
        for n in range(0, 70, 2):  # every other one exists, with one or two leases
            tx.apply(PutResource("t", f"r{n}", 2, n + 2, None, None, None, None, None))
            for token in range(n + 1, n + 3 if n % 4 else n + 2):
                tx.apply(PutLease("t", f"r{n}", token, f"h{token}", b"d" * 32, 5_000, None, n))
        tx.apply(PutResource("u", "r1", 1, 1, None, None, None, None, None))
        inside = tx.resources(keys)  # before the commit: this transaction's own rows
        assert inside == {key: tx.resource(*key) for key in keys if tx.resource(*key)}
    with storage.transaction() as tx:
        found = tx.resources(keys)
        assert found == {key: tx.resource(*key) for key in keys if tx.resource(*key)}
        assert len(found) == 36 and found[("t", "r4")].leases[0].holder == "h5"
        assert [lease.fencing_token for lease in found[("t", "r2")].leases] == [3, 4]


def test_changes_of_one_transaction_take_effect_in_their_order(storage: Storage) -> None:
    first = PutResource("t", "r", 1, 1, None, None, None, None, None)
    with storage.transaction() as tx:
        tx.apply(first)
        tx.apply(PutLease("t", "r", 1, "a", b"d" * 32, 5_000, None, 0))
        tx.apply(SetLeaseExpiry("t", "r", 1, 6_000))
        tx.apply(DropLease("t", "r", 1))
        tx.apply(PutLease("t", "r", 2, "b", b"e" * 32, 7_000, None, 1))
        tx.apply(SetLeaseExpiry("t", "r", 2, 8_000))
        tx.apply(PutResource("t", "r", 1, 2, None, None, None, None, None))
    with storage.transaction() as tx:
        assert tx.resource("t", "r") == Resource(
            "t", "r", 1, 2, leases=[Lease("b", 2, b"e" * 32, 8_000, None, 1)]
        )
