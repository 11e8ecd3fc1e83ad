"""The storage contract (ledger/storage.py, docs/decisions/0005), run against every backend.

Each backend is opened on a real store (SQLite: a real file in tmp_path; PostgreSQL: a fresh
database on the real server the suite starts, tests/postgres.py); a backend is one entry in
``BACKENDS`` and passes every test here unchanged.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from ledger.backends import gauges, open_backend, open_storage, writer_strategy
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
    PutCheckpoint,
    PutLease,
    PutNodes,
    PutResource,
    RaiseFencingFloor,
    RememberRequest,
    SetLeaseExpiry,
)
from ledger.fencing_floor import Floor, FloorRefused, raise_floor
from ledger.lease.leases import Completion, Lease, Resource
from ledger.storage import (
    ApiKeyRecord,
    KeyRecord,
    RequestRecord,
    Storage,
    StorageError,
    Transaction,
    WaiterRecord,
)
from ledger.writer.committer import GroupCommitter
from ledger.writer.strategy import Turns
from tests.names_key import NAMES

Location = Callable[[pytest.FixtureRequest, Path], "Path | str"]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    return tmp_path / "data"  # a real file


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    return str(request.getfixturevalue("postgres_url"))  # a fresh database on a real server


BACKENDS: dict[str, Location] = {"sqlite": _sqlite, "postgres": _postgres}
"""Where each backend keeps a fresh ledger for one test; ``open_storage`` picks the backend."""


@pytest.fixture(params=sorted(BACKENDS))
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Storage]]:
    """Opens the backend on the same location again each call; closes them all afterwards."""
    location = BACKENDS[request.param](request, tmp_path)
    opened: list[Storage] = []

    def open_again() -> Storage:
        opened.append(open_storage(location, names=NAMES))
        return opened[-1]

    yield open_again
    for storage in opened:
        storage.close()


@pytest.fixture
def storage(reopen: Callable[[], Storage]) -> Storage:
    return reopen()


LEASE = PutLease("t", "r", 3, "w", b"d" * 32, 5_000, "job", 0)
RESOURCE = PutResource("t", "r", 2, 3, 9_000, b"f" * 32, '{"ok": 1}', 4_000, b"g" * 32)
REQUEST = RememberRequest("t", "req-1", b"q" * 32, '{"outcome": "GRANTED"}', 1_000)
CHECKPOINT = PutCheckpoint(1, b"h" * 32, 2_000, "origin\n1\nroot\n\nsig\n", "did:key:z1")


def commit(storage: Storage, *changes: Change) -> None:
    with storage.transaction() as tx:
        for change in changes:
            tx.apply(change)


def seed(storage: Storage) -> None:
    commit(storage, AppendEntry(0, b'{"e":0}'), PutNodes(((0, 0, b"n" * 32),)), RESOURCE, LEASE)


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


def expected_resource(expires_at: int = 5_000) -> Resource:
    completion = Completion({"ok": 1}, 4_000, b"g" * 32)
    res = Resource("t", "r", 2, 3, 9_000, b"f" * 32, completion)
    res.leases.append(Lease("w", 3, b"d" * 32, expires_at, "job", 0))
    return res


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


class Gated:
    """The backend under test, whose writers can be held back or whose transactions made to
    fail once. A writer waits at :attr:`gate` where it would wait for another writer's lock:
    in the transaction on a writer thread, in the lock's loan on lent turns (decisions/0017)."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.arrived = threading.Event()
        """Set once a writer waits at the gate."""
        self.opened = 0
        self.gate = threading.Event()
        self.fail_next = False

    def transaction(self) -> AbstractContextManager[Transaction]:
        return self._transaction()

    def turns(self) -> GatedTurns | None:
        inner = self.inner.turns()
        return None if inner is None else GatedTurns(self, inner)

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        if self.inner.turns() is None:
            self.wait()
        self.opened += 1
        with self.inner.transaction() as tx:
            if self.fail_next:
                self.fail_next = False
                raise OSError("disk full")
            yield tx

    def wait(self) -> None:
        self.arrived.set()
        self.gate.wait(5)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class GatedTurns:
    """A backend's lent turns, each waiting at the gate first."""

    def __init__(self, gated: Gated, inner: Turns) -> None:
        self.gated, self.inner = gated, inner

    def lend(self, thread: int) -> None:
        self.gated.wait()
        self.inner.lend(thread)

    def give_back(self) -> None:
        self.inner.give_back()


def run(scenario: Callable[[Gated, GroupCommitter], Any], storage: Storage) -> None:
    async def main() -> None:
        gated = Gated(storage)
        committer = GroupCommitter(gated, asyncio.get_running_loop())  # type: ignore[arg-type]
        try:
            await scenario(gated, committer)
        finally:
            gated.gate.set()
            committer.close()

    asyncio.run(main())


async def held_first_commit(gated: Gated, committer: GroupCommitter) -> list[Any]:
    """One batch waits at the gate (as for another writer's lock) while three more queue;
    returns all four futures."""
    first = committer.submit([AppendEntry(0, b"{}")])
    assert await asyncio.to_thread(gated.arrived.wait, 5)  # the first batch waits for the lock
    rest = [
        committer.submit([AppendEntry(1, b"{}")]),
        committer.submit(lambda tx: tx.apply(AppendEntry(2, b"{}"))),  # a function of the tx
        committer.submit([AppendEntry(3, b"{}"), REQUEST]),
    ]
    gated.gate.set()
    return [first, *rest]


def test_group_commit_runs_queued_batches_in_one_transaction(storage: Storage) -> None:
    """Units queued while a batch waits for its transaction join it (docs/decisions/0012)."""

    async def scenario(gated: Gated, committer: GroupCommitter) -> None:
        futures = await held_first_commit(gated, committer)
        await asyncio.gather(*futures)
        assert (gated.opened, committer.commits) == (1, 1)
        assert storage.tree_size() == 4
        assert [i for i, _ in storage.entries(0, 9)] == [0, 1, 2, 3]

    run(scenario, storage)


def test_a_failed_commit_refuses_its_batch_and_the_next_one_tries_again(storage: Storage) -> None:
    """docs/decisions/0006: no state in memory runs ahead of the disk, so a failed commit
    refuses only the units it carried; the next batch commits as usual."""

    async def scenario(gated: Gated, committer: GroupCommitter) -> None:
        gated.fail_next = True
        futures = await held_first_commit(gated, committer)
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert isinstance(results[0], StorageError)
        assert all(r is None or isinstance(r, StorageError) for r in results)
        kept = [n for n, result in enumerate(results) if result is None]
        assert kept in ([1, 2, 3], [])  # queued behind it (a writer thread), or with it (turns)
        assert [i for i, _ in storage.entries(0, 9)] == kept  # nothing of the failed batch
        following = storage.tree_size()
        await committer.submit([AppendEntry(following, b"{}")])  # the next batch commits
        assert committer.failure is None
        assert [i for i, _ in storage.entries(0, 9)] == [*kept, following]

    run(scenario, storage)


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


def test_each_backend_offers_the_writers_hooks_and_the_gauges(storage: Storage) -> None:
    """What the writer and the metrics take beyond the seam, checked for once on opening:
    SQLite lends its write lock to the event loop, PostgreSQL writes on a thread."""
    assert writer_strategy(storage) is storage and gauges(storage) is storage
    lent = writer_strategy(storage).turns() is not None
    assert lent == (type(storage).__module__ == "ledger.sqlite.backend")


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_open_backend_refuses_a_ledger_first_served_with_other_keys(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    location = BACKENDS[backend](request, tmp_path)
    served = open_backend(location, names=NAMES, keys="a" * 64)
    try:
        assert served.seal_turn.take() == 0.0  # the turn of this ledger, never sealed yet
        served.seal_turn.give(None)
        with pytest.raises(StorageError, match="keys folder"):
            open_backend(location, names=NAMES, keys="b" * 64)
    finally:
        served.close()
    open_backend(location, names=NAMES, keys="a" * 64).close()  # closed: nothing left held
