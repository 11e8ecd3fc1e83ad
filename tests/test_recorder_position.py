"""The recorder answers the commit's position with the root its last event computed, and only
while that root is the tree's: a reloaded frontier (a failed commit, another writer) is folded
again."""

from __future__ import annotations

from ledger.lease import leases
from ledger.lease.leases import AcquireArgs, Resource
from ledger.lease.recorder import Recorder
from ledger.log.merkle import CompactRange
from ledger.log.text import b64

NOW = 1_780_000_000_000


def _grant(recorder: Recorder, name: str) -> None:
    res = Resource("t", name)
    decision = leases.acquire(res, AcquireArgs("h", 1000, 60_000, b"\x01" * 32), NOW)
    recorder.record(res, decision)


def _tree_of(leaves: list[bytes]) -> CompactRange:
    tree = CompactRange()
    for leaf in leaves:
        tree.append(leaf)
    return tree


def test_the_position_after_a_record_is_the_trees() -> None:
    recorder = Recorder(CompactRange(), b"k" * 32)
    for n in range(5):
        _grant(recorder, f"r{n}")
        position = recorder.position()
        assert position.tree_size == n + 1
        assert position.root_hash == b64(recorder.tree.root())
        assert position.log_index is None and position.leaf_hash is None


def test_a_reloaded_tree_of_the_same_size_is_folded_again() -> None:
    recorder = Recorder(CompactRange(), b"k" * 32)
    for n in range(3):
        _grant(recorder, f"r{n}")
    before = recorder.position()
    other = _tree_of([bytes([n]) * 32 for n in range(3)])  # what another writer appended
    recorder.tree = other
    after = recorder.position()
    assert after.tree_size == before.tree_size == 3
    assert after.root_hash == b64(other.root()) != before.root_hash
