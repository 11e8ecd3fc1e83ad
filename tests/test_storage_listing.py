"""``Storage.live_resources`` (a tenant's live leases, docs/decisions/0034), on every backend
the storage contract runs over: a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from ledger.changes import DropLease, PutLease, PutResource
from ledger.lease.leases import Lease
from ledger.storage import Listed, Storage
from tests import storage_util
from tests.storage_util import commit

# The fixtures, taken by name: every test here runs on every backend.
location, reopen, storage = storage_util.location, storage_util.reopen, storage_util.storage


def resource(tenant: str, name: str, capacity: int = 1) -> PutResource:
    return PutResource(tenant, name, capacity, 5, None, None, None, None, None)


def lease(tenant: str, name: str, token: int, holder: str, expires: int, scope: str | None = None):
    return PutLease(tenant, name, token, holder, b"o" * 32, expires, scope, token * 10)


def walk(storage: Storage, tenant: str, now: int, scan: int) -> list[Listed]:
    """Every step from the first, checking each goes on after the last."""
    found: list[Listed] = []
    after: bytes | None = b""
    while after is not None:
        step = storage.live_resources(tenant, after, now, scan)
        assert all(listed.position > after for listed in step.found)
        found += step.found
        after = step.next
    return found


def test_live_leases_of_one_tenant_with_names_capacity_and_holders(storage: Storage) -> None:
    commit(storage, resource("t", "deploy:prod"), lease("t", "deploy:prod", 5, "w1", 9_000, "job"))
    commit(storage, resource("t", "pool", 3), lease("t", "pool", 1, "a", 9_000))
    commit(storage, lease("t", "pool", 2, "b", 4_000), lease("t", "pool", 4, "c", 9_000))
    commit(
        storage, resource("t", "idle"), resource("u", "theirs"), lease("u", "theirs", 1, "x", 9_000)
    )
    commit(storage, resource("t", "lapsed"), lease("t", "lapsed", 2, "z", 5_000))
    found = {listed.name: listed for listed in walk(storage, "t", 5_000, 100)}
    assert sorted(found) == ["deploy:prod", "pool"]  # idle has none, lapsed expired at 5_000
    assert found["deploy:prod"].leases == (Lease("w1", 5, b"o" * 32, 9_000, "job", 50),)
    assert found["deploy:prod"].capacity == 1 and found["pool"].capacity == 3
    assert [(lease.holder, lease.fencing_token) for lease in found["pool"].leases] == [
        ("a", 1),
        ("c", 4),
    ]  # b's lease expired at 4_000
    assert [listed.name for listed in walk(storage, "t", 4_999, 100)].count("lapsed") == 1
    assert [listed.name for listed in walk(storage, "u", 5_000, 100)] == ["theirs"]
    assert walk(storage, "nobody", 0, 100) == []


def test_steps_cover_every_resource_once_in_a_stable_order(storage: Storage) -> None:
    names = [f"job-{i}" for i in range(11)]
    for at, name in enumerate(names):
        commit(storage, resource("t", name))
        if at % 3:  # a third of them hold no lease: the scan looks at them, lists none
            commit(storage, lease("t", name, 1, "w", 9_000))
    first = walk(storage, "t", 0, 100)
    assert sorted(listed.name for listed in first) == sorted(
        n for i, n in enumerate(names) if i % 3
    )
    for scan in (1, 2, 5):
        assert walk(storage, "t", 0, scan) == first  # the same order, whatever the step
    step = storage.live_resources("t", b"", 0, 4)
    assert step.next is not None and len(step.found) <= 4


def test_a_grant_or_release_between_steps_moves_no_resource(storage: Storage) -> None:
    names = [f"r-{i}" for i in range(8)]
    for name in names:
        commit(storage, resource("t", name), lease("t", name, 1, "w", 9_000))
    step = storage.live_resources("t", b"", 0, 3)
    assert step.next is not None
    seen = [listed.name for listed in step.found]
    commit(
        storage, DropLease("t", seen[0], 1), resource("t", "new"), lease("t", "new", 1, "n", 9_000)
    )
    rest = walk_from(storage, step.next)
    assert not set(seen) & set(rest)  # nothing listed twice
    assert set(names) - set(seen) <= set(rest)  # and nothing that stayed live is missed


def walk_from(storage: Storage, after: bytes) -> list[str]:
    found: list[str] = []
    position: bytes | None = after
    while position is not None:
        step = storage.live_resources("t", position, 0, 3)
        found += [listed.name for listed in step.found]
        position = step.next
    return found
