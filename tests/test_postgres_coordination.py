"""Building blocks for several nodes on one database, on the real server (decisions/0009): one
leader per role by advisory lock, taken over when its session ends; NOTIFY from a write
transaction wakes the listening node only once that transaction commits; a worker alive exactly
while a session holds its liveness lock, renewed after the session was lost."""

from __future__ import annotations

import queue
from collections.abc import Iterator

import psycopg
import pytest

from ledger.backends import open_storage
from ledger.postgres.connection import connect
from ledger.postgres.leader import AdvisoryLeader
from ledger.postgres.membership import PostgresMembership
from ledger.postgres.wakeup import Wakeups, channel, notify
from ledger.storage import StorageError

ROLE = 0x7465_6E75_7265_0010


@pytest.fixture
def leaders(postgres_url: str) -> Iterator[tuple[AdvisoryLeader, AdvisoryLeader]]:
    a, b = AdvisoryLeader(postgres_url, ROLE), AdvisoryLeader(postgres_url, ROLE)
    yield a, b
    a.close()
    b.close()


def test_one_leader_at_a_time_and_a_clean_handover(
    leaders: tuple[AdvisoryLeader, AdvisoryLeader],
) -> None:
    a, b = leaders
    assert (a.try_lead(), b.try_lead()) == (True, False)
    assert (a.try_lead(), b.try_lead()) == (True, False)  # leadership is kept, not re-won
    a.resign()
    assert (b.try_lead(), a.try_lead()) == (True, False)


def test_another_node_takes_over_when_the_leaders_session_ends(
    leaders: tuple[AdvisoryLeader, AdvisoryLeader], postgres_url: str
) -> None:
    a, b = leaders
    assert a.try_lead() and not b.try_lead()
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # a killed; waits for its exit
        admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_locks"
            " WHERE locktype = 'advisory' AND granted AND database ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
    assert b.try_lead() is True
    assert a.try_lead() is False  # a notices its session died and does not lead


def test_an_unreachable_database_means_not_leading(tmp_path: object) -> None:
    leader = AdvisoryLeader(f"postgresql://tenure@/none?host={tmp_path}", ROLE)
    assert leader.try_lead() is False
    leader.close()


def test_a_notify_wakes_only_its_node_and_only_on_commit(postgres_url: str) -> None:
    woken: queue.SimpleQueue[str] = queue.SimpleQueue()
    other: queue.SimpleQueue[str] = queue.SimpleQueue()
    mine, theirs = Wakeups(postgres_url, "n1", woken.put), Wakeups(postgres_url, "n2", other.put)
    try:
        assert mine.start() and theirs.start()
        with connect(postgres_url) as conn:
            with pytest.raises(RuntimeError), conn.transaction():
                notify(conn, "n1", "rolled-back")
                raise RuntimeError("the grant failed")
            with conn.transaction():
                notify(conn, "n1", "waiter-1")
                notify(conn, "n1", "waiter-2")
        assert [woken.get(timeout=5), woken.get(timeout=5)] == ["waiter-1", "waiter-2"]
        assert woken.empty() and other.empty()
    finally:
        mine.close()
        theirs.close()


def test_node_ids_are_checked_before_they_name_a_channel() -> None:
    assert channel("ab12") == "tenure_wake_ab12"
    with pytest.raises(ValueError):
        channel('x"; DROP TABLE entries; --')


@pytest.fixture
def ledger_url(postgres_url: str) -> str:
    """A database holding a ledger's schema (members record the keys fingerprint in it)."""
    open_storage(postgres_url).close()
    return postgres_url


def test_membership_liveness_by_session_lock_and_its_renewal(ledger_url: str) -> None:
    postgres_url = ledger_url
    a, b = PostgresMembership(postgres_url, "k"), PostgresMembership(postgres_url, "k")
    try:
        assert a.worker != b.worker
        assert a.dead([a.worker, b.worker, "0badcafe"]) == ["0badcafe"]
        assert a.try_lead() and not b.try_lead()
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # a's sessions end
            admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                " WHERE application_name = 'tenure' AND datname = current_database()"
            )
        assert b.try_lead() or b.try_lead()  # b's next rounds reconnect, and it takes over
        assert b.dead([a.worker]) == [a.worker]
        a.try_lead()  # a's next round takes its liveness lock again on a new session
        assert not a.leader and b.dead([a.worker]) == []
    finally:
        a.close()
        b.close()
    other = PostgresMembership(postgres_url, "k")
    try:
        assert other.dead([a.worker, b.worker]) == [a.worker, b.worker]  # both left
    finally:
        other.close()


def test_a_member_with_another_keys_fingerprint_is_refused(ledger_url: str) -> None:
    postgres_url = ledger_url
    first = PostgresMembership(postgres_url, "fingerprint-1")
    try:
        with pytest.raises(StorageError, match="keys folder differs"):
            PostgresMembership(postgres_url, "fingerprint-2")
    finally:
        first.close()
