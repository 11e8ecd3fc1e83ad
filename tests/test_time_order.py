"""Entries' times never go backwards in index order (DESIGN §6): a backdated grant that makes room
for itself, or an event dated before its grant, fails `tenure audit --trust` and the monitor,
naming the entry and both times. The monitor's rule state stays bounded by what is live."""

from __future__ import annotations

from pathlib import Path

import pytest

import verify.monitor
from tests.test_audit import Ledger, at, read, tenure, trusted
from tests.test_monitor_rules import follow, restart, state_of
from verify.audit import audit


def backdated_grant() -> Ledger:
    """A holds until :30, its expiry is logged at :31, then B is granted "at :20"."""
    ledger = Ledger().add("acquire", 1, 0, 30).add("expire", 1, 31, 30, lease_id=0)
    return ledger.add("acquire", 2, 20, 50, holder="b" * 64)


def release_before_grant() -> Ledger:
    return Ledger().add("acquire", 1, 5, 30).add("release", 1, 3, 30, lease_id=0)


def checks(ledger: Ledger) -> list[tuple[int | None, str, str]]:
    records = ledger.records()
    report = audit(records, trusted_keys=[trusted(records)])
    return [(v.index, v.check, v.message) for v in report.violations]


def test_a_backdated_grant_fails_the_audit_with_both_times(tmp_path: Path) -> None:
    found = checks(backdated_grant())
    assert found == [(2, "time-order", f"time {at(20)} is before {at(31)} of entry 1")]
    path = backdated_grant().write(tmp_path / "backdated.jsonl")
    run = tenure("audit", str(path), "--trust", trusted(read(path)))
    assert run.returncode == 1 and "entry 2: time-order:" in run.stdout, run.stdout


def test_an_event_dated_before_its_grant_fails() -> None:
    found = {(index, check) for index, check, _ in checks(release_before_grant())}
    assert found == {(1, "time-order"), (1, "before-grant")}


def test_equal_times_pass() -> None:
    """One batch of the server shares one time: equal is not backwards."""
    ledger = Ledger().add("acquire", 1, 5, 30).add("release", 1, 5, 30, lease_id=0)
    assert checks(ledger.add("acquire", 2, 5, 30)) == []


def test_the_monitor_finds_it_across_a_restart() -> None:
    ledger = backdated_grant()
    state = state_of(ledger)
    assert follow(state, ledger, 2) == []
    found = follow(restart(state), ledger, 3)
    assert [(f.index, f.check) for f in found] == [(2, "time-order")]
    assert at(31) in found[0].message


def test_the_monitor_state_keeps_live_leases_and_a_bounded_number_of_ended_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(verify.monitor, "DORMANT_KEPT", 2)
    ledger, resources = Ledger(), [c * 64 for c in "abcde"]
    for n, resource in enumerate(resources):  # each lifecycle ends before the last entry
        short = {"resource": resource, "absoluteExpiresAt": at(2 * n + 1)}
        ledger.add("acquire", 1, 2 * n, 2 * n + 1, **short)
        ledger.add("release", 1, 2 * n, 2 * n + 1, lease_id=2 * n, **short)
    ledger.add("acquire", 1, 20, 50, resource="f" * 64)  # still held
    state = state_of(ledger)
    assert follow(state, ledger, len(ledger.entries)) == []
    rules = restart(state).rules
    assert [row[1] for row in rules["resources"]] == ["f" * 64]
    assert rules["dormant"] == [["t" * 64, "d" * 64, 1], ["t" * 64, "e" * 64, 1]]
    # A remembered ended resource is still fenced: token 1 again on "e" is found.
    ledger.add("acquire", 1, 21, 50, resource="e" * 64)  # lifecycle ended: a fresh one
    found = follow(restart(state), ledger, len(ledger.entries))
    assert [(f.index, f.check) for f in found] == [(11, "fencing")]


def test_a_round_lists_a_bounded_number_of_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify.monitor, "MAX_FINDINGS", 2)
    ledger = Ledger().add("acquire", 1, 0, 30)
    for n in range(1, 6):  # five grants over capacity
        ledger.add("acquire", n + 1, n, 30, holder=f"{n:064x}")
    state = state_of(ledger)
    found = follow(state, ledger, len(ledger.entries))
    assert [f.check for f in found] == ["capacity", "capacity", "findings-omitted"]
    assert found[-1].message == "3 more findings in this round are not listed"
    assert state.findings == 5
