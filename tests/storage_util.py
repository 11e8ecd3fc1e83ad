"""A fresh ledger on every backend, for the tests of the storage contract (ledger/storage.py).

Each backend is opened on a real store (SQLite: a real file in tmp_path; PostgreSQL: a fresh
database on the real server the suite starts, tests/postgres.py); a backend is one entry in
:data:`BACKENDS`. A test module takes the fixtures by binding them to their names; the changes
below are the rows the contract's tests write and read back, :func:`running` a lease service on
a ledger.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from ledger.backends import open_storage
from ledger.changes import (
    AppendEntry,
    Change,
    PutCheckpoint,
    PutLease,
    PutNodes,
    PutResource,
    RememberRequest,
)
from ledger.lease.calls import LeaseCall
from ledger.lease.leases import Completion, Lease, Resource
from ledger.storage import Storage
from ledger.writer.service import LeaseService
from tests.names_key import NAMES

Location = Callable[[pytest.FixtureRequest, Path], "Path | str"]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    return tmp_path / "data"  # a real file


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    return str(request.getfixturevalue("postgres_url"))  # a fresh database on a real server


BACKENDS: dict[str, Location] = {"sqlite": _sqlite, "postgres": _postgres}
"""Where each backend keeps a fresh ledger for one test; ``open_storage`` picks the backend."""


@pytest.fixture(params=sorted(BACKENDS))
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A fresh ledger's location on each backend in turn (SQLite's a :class:`Path`)."""
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def reopen(location: Path | str) -> Iterator[Callable[[], Storage]]:
    """Opens the backend on the same location again each call; closes them all afterwards."""
    opened: list[Storage] = []

    def open_again() -> Storage:
        opened.append(open_storage(location, names=NAMES))
        return opened[-1]

    yield open_again
    for storage in opened:
        storage.close()


@pytest.fixture
def storage(reopen: Callable[[], Storage]) -> Storage:
    """The backend opened once on a fresh ledger."""
    return reopen()


LEASE = PutLease("t", "r", 3, "w", b"d" * 32, 5_000, "job", 0)
RESOURCE = PutResource("t", "r", 2, 3, 9_000, b"f" * 32, '{"ok": 1}', 4_000, b"g" * 32)
REQUEST = RememberRequest("t", "req-1", b"q" * 32, '{"outcome": "GRANTED"}', 1_000)
CHECKPOINT = PutCheckpoint(1, b"h" * 32, 2_000, "origin\n1\nroot\n\nsig\n", "did:key:z1")


def commit(storage: Storage, *changes: Change) -> None:
    """``changes`` applied in one transaction, committed."""
    with storage.transaction() as tx:
        for change in changes:
            tx.apply(change)


def seed(storage: Storage) -> None:
    """One entry, its node, :data:`RESOURCE` and its :data:`LEASE`, committed."""
    commit(storage, AppendEntry(0, b'{"e":0}'), PutNodes(((0, 0, b"n" * 32),)), RESOURCE, LEASE)


def expected_resource(expires_at: int = 5_000) -> Resource:
    """:data:`RESOURCE` with :data:`LEASE` as a read gives them back."""
    completion = Completion({"ok": 1}, 4_000, b"g" * 32)
    res = Resource("t", "r", 2, 3, 9_000, b"f" * 32, completion)
    res.leases.append(Lease("w", 3, b"d" * 32, expires_at, "job", 0))
    return res


def acquire(resource: str) -> LeaseCall:
    """An acquire of ``resource`` by holder ``w`` of tenant ``t``."""
    return LeaseCall(op="acquire", tenant="t", resource=resource, holder="w")


@asynccontextmanager
async def running(location: Path | str) -> AsyncIterator[tuple[Storage, LeaseService]]:
    """A started lease service on the ledger at ``location``, stopped and closed after."""
    storage = open_storage(location, names=NAMES)
    service = LeaseService(storage, b"s" * 32)
    await service.start()
    try:
        yield storage, service
    finally:
        await service.stop()
        storage.close()
