"""Property tests: ledger/log/merkle.py against a naive RFC 9162 reference and against pymerkle.

The reference below is RFC 9162 §2.1.1 (MTH), §2.1.3.1 (PATH) and §2.1.4.1 (PROOF/SUBPROOF)
transcribed literally, with hashlib only, so it shares no code with the module under test.
Every generated proof is also checked by the offline verifier (verify/rfc9162.py).

pymerkle (GPL-3.0, tests only) is the second implementation. Its default hasher already uses
the RFC 9162 prefixes (0x00 leaf, 0x01 node); ``disable_security=True`` would *remove* them,
so it is left enabled. Its consistency proofs use their own layout (a rule/subset encoding, not
RFC 9162's list), so for those we only check that pymerkle accepts our roots.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable

import pymerkle
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.log.merkle import CompactRange, consistency_proof, inclusion_proof, root_at
from verify.errors import VerificationError
from verify.rfc9162 import verify_consistency, verify_inclusion

MAX = 300
ENTRIES = [f"entry {i}".encode() for i in range(MAX)]


# --- RFC 9162 §2.1, written plainly ---------------------------------------------------------


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: list[bytes]) -> bytes:
    if not d:
        return _sha(b"")
    if len(d) == 1:
        return _sha(b"\x00" + d[0])
    k = _k(len(d))
    return _sha(b"\x01" + mth(d[:k]) + mth(d[k:]))


def path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = _k(len(d))
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def proof(m: int, d: list[bytes]) -> list[bytes]:
    return subproof(m, d, True)


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = _k(n)
    if m <= k:
        return [*subproof(m, d[:k], b), mth(d[k:])]
    return [*subproof(m - k, d[k:], False), mth(d[:k])]


# --- the stored tree ------------------------------------------------------------------------


def _build() -> tuple[dict[tuple[int, int], bytes], list[CompactRange]]:
    """Append all entries once; keep every persisted node and a snapshot of every size."""
    store: dict[tuple[int, int], bytes] = {}
    cr, snapshots = CompactRange.empty(), [CompactRange.empty()]
    for entry in ENTRIES:
        for level, idx, h in cr.append(_sha(b"\x00" + entry)):
            assert (level, idx) not in store, "a perfect node is written once"
            store[level, idx] = h
        snapshots.append(copy.deepcopy(cr))
    return store, snapshots


STORE, SNAPSHOTS = _build()


def stored(level: int, idx: int) -> bytes:
    return STORE[level, idx]


class Reads:
    """A NodeGetter over STORE that refuses nodes beyond ``size`` and counts reads."""

    def __init__(self, size: int) -> None:
        self.size, self.count = size, 0

    def __call__(self, level: int, idx: int) -> bytes:
        assert (idx + 1) << level <= self.size, f"read of ({level}, {idx}) beyond size"
        self.count += 1
        return STORE[level, idx]

    def assert_logarithmic(self) -> None:
        assert self.count <= 2 * max(1, self.size.bit_length()) + 1


def _flip(b: bytes, i: int) -> bytes:
    return b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1 :]


sizes = st.integers(min_value=1, max_value=MAX)


@st.composite
def index_and_size(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(sizes)
    return draw(st.integers(0, size - 1)), size


@st.composite
def first_and_second(draw: st.DrawFn) -> tuple[int, int]:
    second = draw(sizes)
    return draw(st.integers(1, second)), second


# --- properties -----------------------------------------------------------------------------


def test_root_of_every_prefix() -> None:
    for size in range(MAX + 1):
        reads = Reads(size)
        want = mth(ENTRIES[:size])
        assert root_at(size, reads) == want == SNAPSHOTS[size].root()
        reads.assert_logarithmic()


@given(index_and_size())
def test_inclusion_matches_rfc(case: tuple[int, int]) -> None:
    index, size = case
    reads = Reads(size)
    got = inclusion_proof(index, size, reads)
    reads.assert_logarithmic()
    assert got == path(index, ENTRIES[:size])
    leaf = _sha(b"\x00" + ENTRIES[index])
    verify_inclusion(index, size, leaf, got, mth(ENTRIES[:size]))


@given(first_and_second())
def test_consistency_matches_rfc(case: tuple[int, int]) -> None:
    first, second = case
    reads = Reads(second)
    got = consistency_proof(first, second, reads)
    reads.assert_logarithmic()
    assert got == proof(first, ENTRIES[:second])
    verify_consistency(first, second, mth(ENTRIES[:first]), mth(ENTRIES[:second]), got)


@given(st.integers(0, MAX))
def test_load_equals_in_memory_and_resumes(size: int) -> None:
    cr = CompactRange.load(size, Reads(size))
    assert cr == SNAPSHOTS[size]
    for entry in ENTRIES[size:]:
        for level, idx, h in cr.append(_sha(b"\x00" + entry)):
            assert STORE[level, idx] == h
    assert cr.root() == SNAPSHOTS[MAX].root()


@given(index_and_size(), st.data())
def test_flipped_inclusion_byte_is_rejected(case: tuple[int, int], data: st.DataObject) -> None:
    index, size = case
    hashes = inclusion_proof(index, size, stored)
    root, leaf = mth(ENTRIES[:size]), _sha(b"\x00" + ENTRIES[index])
    target = data.draw(st.integers(-1, len(hashes) - 1))  # -1: the root
    byte = data.draw(st.integers(0, 31))
    if target < 0:
        root = _flip(root, byte)
    else:
        hashes[target] = _flip(hashes[target], byte)
    with pytest.raises(VerificationError):
        verify_inclusion(index, size, leaf, hashes, root)


@given(first_and_second(), st.data())
def test_flipped_consistency_byte_is_rejected(case: tuple[int, int], data: st.DataObject) -> None:
    first, second = case
    hashes = consistency_proof(first, second, stored)
    roots = [mth(ENTRIES[:first]), mth(ENTRIES[:second])]
    target = data.draw(st.integers(-2, len(hashes) - 1))  # -2, -1: root1, root2
    byte = data.draw(st.integers(0, 31))
    if target < 0:
        roots[target] = _flip(roots[target], byte)
    else:
        hashes[target] = _flip(hashes[target], byte)
    with pytest.raises(VerificationError):
        verify_consistency(first, second, roots[0], roots[1], hashes)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (inclusion_proof, (0, 0)),
        (inclusion_proof, (5, 5)),
        (inclusion_proof, (-1, 5)),
        (consistency_proof, (6, 5)),
        (consistency_proof, (-1, 5)),
        (consistency_proof, (0, 5)),
        (root_at, (-1,)),
    ],
)
def test_out_of_range_is_value_error(call: Callable[..., object], args: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        call(*args, stored)


def test_trivial_consistency_proofs_are_empty() -> None:
    assert consistency_proof(0, 0, stored) == []
    assert consistency_proof(7, 7, stored) == []


@pytest.mark.parametrize("size", [2**40, 2**40 + 1, 2**62 - 1, 10**15 + 12345])
def test_huge_sizes_cost_logarithmic_reads(size: int) -> None:
    # Synthetic nodes (not a consistent tree): this checks only the read pattern.
    reads: list[tuple[int, int]] = []

    def get(level: int, idx: int) -> bytes:
        assert (idx + 1) << level <= size
        reads.append((level, idx))
        return _sha(f"{level}/{idx}".encode())

    bound = 2 * size.bit_length() + 1
    for run in (
        lambda: root_at(size, get),
        lambda: inclusion_proof(size // 3, size, get),
        lambda: inclusion_proof(size - 1, size, get),
        lambda: consistency_proof(size // 2 + 1, size, get),
        lambda: CompactRange.load(size, get),
    ):
        reads.clear()
        run()
        assert len(reads) <= bound


# --- pymerkle, the second implementation ----------------------------------------------------


@pytest.fixture(scope="module")
def pm_tree() -> pymerkle.InmemoryTree:
    tree = pymerkle.InmemoryTree(algorithm="sha256")
    assert (tree.leaf_prefix, tree.node_prefix) == (b"\x00", b"\x01")  # RFC 9162 hashing
    tree.append_entries(ENTRIES)
    return tree


def test_pymerkle_roots_agree(pm_tree: pymerkle.InmemoryTree) -> None:
    for size in range(MAX + 1):
        assert pm_tree.get_root(size) == root_at(size, stored)


@given(index_and_size())
def test_pymerkle_inclusion_agrees(pm_tree: pymerkle.InmemoryTree, case: tuple[int, int]) -> None:
    index, size = case
    theirs = pm_tree.prove_inclusion(index + 1, size)  # pymerkle counts leaves from one
    # Its path starts with the leaf hash itself, then the RFC 9162 audit path.
    assert theirs.path[0] == _sha(b"\x00" + ENTRIES[index])
    assert theirs.path[1:] == inclusion_proof(index, size, stored)


@given(first_and_second())
def test_pymerkle_accepts_our_roots(pm_tree: pymerkle.InmemoryTree, case: tuple[int, int]) -> None:
    first, second = case
    theirs = pm_tree.prove_consistency(first, second)
    pymerkle.verify_consistency(root_at(first, stored), root_at(second, stored), theirs)
