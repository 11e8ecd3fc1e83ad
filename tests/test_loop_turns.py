"""The event loop writes its own batches on lent turns (docs/decisions/0017).

On SQLite a helper thread waits for the ledger's write lock and lends it to the loop, which runs
the whole batch — every unit queued meanwhile — in one transaction, then gives the lock back.
What users rely on: the lock still excludes every other thread and process while lent, a batch
queued behind another writer commits as one, the batch runs on the loop's own thread, an answer
is never made from a batch that is not durable, and a write of the borrowing thread never waits
for its own loan.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ledger.backends import open_storage
from ledger.changes import AppendEntry
from ledger.lease.calls import LeaseCall
from ledger.sqlite.backend import SQLiteStorage
from ledger.sqlite.writelock import LOCK_NAME, WriteLock
from ledger.storage import Transaction
from ledger.writer.committer import GroupCommitter
from ledger.writer.service import LeaseService
from ledger.writer.strategy import Turns
from tests.names_key import NAMES

SECRET = b"s" * 32
_TRY_LOCK = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "try:\n"
    "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "except BlockingIOError:\n"
    "    sys.exit(1)\n"
)


def other_process_can_lock(data_dir: Path) -> bool:
    """Whether another process could take the ledger's lock right now."""
    tried = subprocess.run([sys.executable, "-c", _TRY_LOCK, str(data_dir / LOCK_NAME)])
    return tried.returncode == 0


def test_a_lent_lock_excludes_other_threads_and_processes_until_given_back(
    tmp_path: Path,
) -> None:
    lock = WriteLock(tmp_path)
    started, lent, wrote, done, other_in = (threading.Event() for _ in range(5))
    borrower: list[int] = []

    def borrow() -> None:  # stays alive throughout: a thread's ident is reused once it ends
        borrower.append(threading.get_ident())
        started.set()
        lent.wait(5)
        with lock.held():  # under the loan: does not wait for itself
            wrote.set()
        done.wait(5)

    def other() -> None:
        with lock.held():
            other_in.set()

    thread = threading.Thread(target=borrow)
    thread.start()
    assert started.wait(5)
    lock.lend(borrower[0])  # from this thread, for that one
    lent.set()
    assert wrote.wait(5)
    waiting = threading.Thread(target=other)
    waiting.start()
    assert not other_in.wait(0.2)  # another thread waits for the loan to end
    assert not other_process_can_lock(tmp_path)  # and so does another process
    lock.give_back()
    assert other_in.wait(5)
    waiting.join(5)
    assert other_process_can_lock(tmp_path)
    done.set()
    thread.join(5)
    lock.close()


def test_a_thread_waiting_for_the_lock_writes_under_a_loan_made_to_it_meanwhile(
    tmp_path: Path,
) -> None:
    """The loop may write directly while the helper waits to lend it the lock: it must not wait
    for its own loan (that would never end)."""
    lock = WriteLock(tmp_path)
    holder_in, holder_out, wrote, waiting = (threading.Event() for _ in range(4))
    idents: list[int] = []

    def holder() -> None:  # another writer of this process holds the lock for a while
        with lock.held():
            holder_in.set()
            holder_out.wait(5)

    def loop_thread() -> None:
        idents.append(threading.get_ident())
        waiting.set()
        with lock.held():  # waits behind the holder, then finds the lock lent to it
            wrote.set()

    first = threading.Thread(target=holder)
    first.start()
    assert holder_in.wait(5)
    borrowing = threading.Thread(target=loop_thread)
    borrowing.start()
    assert waiting.wait(5)
    helper = threading.Thread(target=lock.lend, args=(idents[0],))
    helper.start()
    holder_out.set()  # the holder lets go: the helper's loan is made, the loop writes under it
    assert wrote.wait(5)
    borrowing.join(5)
    helper.join(5)
    lock.give_back()
    assert other_process_can_lock(tmp_path)
    lock.close()


class Threads:
    """Hooks that note the thread each transaction begins on."""

    def __init__(self) -> None:
        self.began: list[int] = []

    def begin(self, tx: Transaction) -> None:
        self.began.append(threading.get_ident())

    def committed(self) -> None: ...

    def failed(self, error: BaseException) -> None: ...


def test_units_queued_behind_another_writer_commit_as_one_batch_on_the_loop(
    tmp_path: Path,
) -> None:
    storage = open_storage(tmp_path, names=NAMES)
    assert isinstance(storage, SQLiteStorage)
    hooks, release, held = Threads(), threading.Event(), threading.Event()

    def other_writer() -> None:
        with storage.turns().held():
            held.set()
            release.wait(5)

    async def scenario() -> None:
        committer = GroupCommitter(storage, asyncio.get_running_loop(), hooks)
        writer = threading.Thread(target=other_writer)
        writer.start()
        assert await asyncio.to_thread(held.wait, 5)
        try:
            futures: list[Any] = [committer.submit([AppendEntry(n, b"{}")]) for n in range(5)]
            early, durable = committer.submit_early(lambda tx: tx.apply(AppendEntry(5, b"{}")))
            assert early is durable  # on turns the answer is the durable one
            await asyncio.sleep(0)  # the loop runs: the helper waits for the other writer
            assert not any(f.done() for f in [*futures, early]) and committer.commits == 0
            release.set()
            value = await early
            assert storage.tree_size() == 6  # the answer comes durable
            await asyncio.gather(*futures)
            assert value is None and committer.commits == 1  # one transaction for all six
            assert hooks.began == [threading.get_ident()]  # on the loop's own thread
        finally:
            release.set()
            await asyncio.to_thread(writer.join, 5)
            committer.close()

    asyncio.run(scenario())
    storage.close()


def test_a_lease_answer_on_lent_turns_is_made_from_a_durable_batch(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, names=NAMES)

    async def scenario() -> None:
        service = LeaseService(storage, SECRET)
        await service.start()
        try:
            calls = [LeaseCall(op="acquire", tenant="t", resource=f"r{n}") for n in range(20)]
            answered = await asyncio.gather(*(service.lease_early(call) for call in calls))
            for answer, durable in answered:
                assert durable is not None and durable.done() and durable.exception() is None
                assert answer.data["ledger"]["treeSize"] <= storage.tree_size()
            tokens = sorted(answer.data["fencingToken"] for answer, _ in answered)
            assert tokens == [1] * 20 and storage.tree_size() == 20
        finally:
            await service.stop()

    asyncio.run(scenario())
    storage.close()


class Lending:
    """A backend's lent turns, telling when the lock was lent."""

    def __init__(self, inner: Turns) -> None:
        self.inner, self.lent = inner, threading.Event()

    def lend(self, thread: int) -> None:
        self.inner.lend(thread)
        self.lent.set()

    def give_back(self) -> None:
        self.inner.give_back()


def test_a_turn_is_asked_for_once_the_loop_ran_what_it_already_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first unit after a turn asks for the ledger's lock only once the loop has run the
    callbacks it already had — the answers of the batch just written (docs/decisions/0018): no
    other writer waits on a lock lent to a loop still busy, and units those callbacks queue
    join the same transaction."""
    storage = open_storage(tmp_path, names=NAMES)
    assert isinstance(storage, SQLiteStorage)
    lending = Lending(storage.turns())
    monkeypatch.setattr(storage, "turns", lambda: lending)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        committer = GroupCommitter(storage, loop)
        lent_meanwhile: list[bool] = []
        late: list[Any] = []

        def backlog() -> None:  # the loop is busy here: a turn asked already would be lent
            lent_meanwhile.append(lending.lent.wait(0.5))
            late.append(committer.submit([AppendEntry(1, b"{}")]))

        loop.call_soon(backlog)
        first = committer.submit([AppendEntry(0, b"{}")])
        try:
            await first
            await late[0]
            assert lent_meanwhile == [False] and lending.lent.is_set()
            assert committer.commits == 1 and storage.tree_size() == 2
        finally:
            committer.close()

    asyncio.run(scenario())
    storage.close()


def test_closing_with_a_turn_not_yet_asked_still_commits_the_units(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, names=NAMES)

    async def scenario() -> None:
        committer = GroupCommitter(storage, asyncio.get_running_loop())
        future = committer.submit([AppendEntry(0, b"{}")])
        committer.close()  # before the loop ran the callback that asks for the turn
        await asyncio.wait_for(future, 5)
        assert storage.tree_size() == 1

    asyncio.run(scenario())
    storage.close()
