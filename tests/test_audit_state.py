"""The audit's state stays the size of what is live, and its checks stay exact.

A ledger of millions of short leases on fresh names (a fleet's day 100) kept every resource the
audit had seen, live or long ended: 6.8 GB to audit 18.5M entries. ``Rules.forget_ended`` with
no bound shrinks an ended resource to its highest fencing token (what rule 2 still needs), and
the audit calls it as it goes. Random histories, honest and not, are judged the same with the
state shrunk after every entry as with it kept whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.audit
from tests.test_audit import Ledger, at, trusted
from verify.audit import audit
from verify.invariants import Event, Rules

KINDS = ("acquire", "acquire", "renew", "release", "expire", "complete", "revoke")
RESOURCES = ("a" * 64, "b" * 64, "c" * 64)

step = st.tuples(
    st.sampled_from(KINDS),
    st.sampled_from(RESOURCES),
    st.integers(1, 4),  # fencing token
    st.integers(0, 3),  # seconds after the last entry: times never go backwards
    st.integers(0, 6),  # seconds the lease runs past its entry
    st.sampled_from(["x", "y"]),  # owner digest
    st.sampled_from([1, 2]),  # capacity
    st.integers(3, 12),  # the lifecycle's end, seconds after the entry
)


def events(steps: list[tuple[Any, ...]]) -> list[Event]:
    """A history of entries from ``steps``, in index order, with each grant's leaseId its index
    and each later event naming the index of the latest grant of its token."""
    out, now, granted = [], 0, {}
    for index, (kind, resource, token, later, runs, owner, capacity, end) in enumerate(steps):
        now = min(now + later, 50)  # times never go backwards (at(): under a minute)
        key = ("t" * 64, resource)
        lease_id = index if kind == "acquire" else granted.get((key, token), 0)
        if kind == "acquire":
            granted[(key, token)] = index
        time, expires, absolute = at(now), at(now + runs), at(now + end)
        holder = f"{token:064x}"
        args = (holder, token, expires, absolute, capacity, owner, lease_id, None)
        out.append(Event(index, kind, time, key, *args))
    return out


def judged(history: list[Event], shrink: bool) -> tuple[list[Any], list[Any]]:
    found: tuple[list[Any], list[Any]] = ([], [])
    rules = Rules(lambda *f: found[0].append(f), lambda *f: found[1].append(f))
    for event in history:
        rules.apply(event)
        if shrink:
            rules.forget_ended()
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(step, max_size=40))
def test_shrunk_state_judges_every_history_as_the_whole_state_does(
    steps: list[tuple[Any, ...]],
) -> None:
    history = events(steps)
    assert judged(history, shrink=True) == judged(history, shrink=False)


def test_the_audit_shrinks_as_it_goes_and_still_finds_a_repeated_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Many leases, each granted, expired and past its lifecycle; then the first resource's
    token granted again: the audit keeps one token per ended resource, not the resource, and
    still reports the repeat (rule 2)."""
    monkeypatch.setattr(verify.audit, "FORGET_EVERY", 4)
    shrinks: list[int] = []
    forget = Rules.forget_ended

    def counted(rules: Rules, keep: int | None = None) -> None:
        forget(rules, keep)
        shrinks.append(len(rules.resources))

    monkeypatch.setattr(Rules, "forget_ended", counted)
    ledger = Ledger()
    for n in range(20):  # resource n: granted at 2n, expired at 2n + 1, its lifecycle over
        resource, ended = f"{n:064x}", {"absoluteExpiresAt": at(2 * n + 2)}
        ledger.add("acquire", 1, 2 * n, 2 * n + 1, resource=resource, **ended)
        ledger.add("expire", 1, 2 * n + 1, 2 * n + 1, resource=resource, lease_id=2 * n, **ended)
    clean = ledger.records()
    first = audit(clean, [trusted(clean)])
    assert first.ok and not first.warnings
    assert len(shrinks) == 10 and max(shrinks) <= 2  # none of the ended resources kept whole
    ledger.add("acquire", 1, 41, 45, resource=f"{0:064x}")
    report = audit(ledger.records(), [trusted(clean)])
    assert [(v.index, v.check) for v in report.violations] == [(40, "fencing")]


def test_the_audit_scans_no_more_resources_than_it_reads_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Leases whose lifecycles all still run cannot shrink: the audit then spaces its scans by
    the resources left whole, so scanning them costs no more than reading the entries."""
    monkeypatch.setattr(verify.audit, "FORGET_EVERY", 4)
    scanned: list[int] = []
    forget = Rules.forget_ended

    def counted(rules: Rules, keep: int | None = None) -> None:
        scanned.append(len(rules.resources))
        forget(rules, keep)

    monkeypatch.setattr(Rules, "forget_ended", counted)
    ledger = Ledger()
    for n in range(60):  # two grants a second, none ended: their lifecycle (a day) runs on
        resource = f"{n:064x}"
        ledger.add("acquire", 1, n // 2, n // 2 + 1, resource=resource)
    records = ledger.records()
    assert audit(records, [trusted(records)]).ok
    assert scanned == [4, 8, 16, 32] and sum(scanned) <= 60
