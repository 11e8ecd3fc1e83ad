"""The recorder's native path (native/record.c) against its Python reference: the same entry
bytes, the same leaf hashes, nodes and roots, and the same changes from a whole recorder.

``ledger._native`` is optional where there is no C compiler (pyproject.toml); the test command's
install has one and Debian's libcrypto, so it is imported, not skipped.
"""

from __future__ import annotations

import hashlib
import random
import secrets

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import _native
from ledger.lease.entries import Pseudonyms, encode_entry, encode_entry_native
from ledger.lease.lease_model import Decision, Event, EventKind, Lease, Outcome, Resource
from ledger.lease.recorder import Recorder
from tests.test_entry_bytes import events
from verify.compact import CompactRange
from verify.errors import MalformedInput
from verify.rfc9162 import EMPTY_ROOT, leaf_hash

NAMES = Pseudonyms.derive(b"m" * 32, "tenant-a")
LAST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def _native_args(index: int, event: Event, resource: str, digest: str | None) -> tuple[object, ...]:
    lease = event.lease
    scope = None if lease.scope is None else NAMES.scope(lease.scope)
    return (
        *(index, event.kind.value, event.capacity, lease.fencing_token, lease.lease_id),
        *(event.time, event.expires_at, event.lifecycle_end),
        *(NAMES.tenant, NAMES.resource(resource), NAMES.holder(lease.holder)),
        *(lease.owner_digest, scope, event.trigger, digest),
    )


@settings(max_examples=400, deadline=None)
@given(events())
def test_an_entry_has_the_same_bytes_from_either_path(
    case: tuple[int, Event, str, str | None],
) -> None:
    index, event, resource, digest = case
    try:
        expected = encode_entry(index, event, NAMES, resource, digest)
    except MalformedInput:  # an unsafe integer: refused by both paths
        with pytest.raises(MalformedInput):
            encode_entry_native(index, event, NAMES, resource, digest)
        return
    assert encode_entry_native(index, event, NAMES, resource, digest) == expected


safe = st.integers(-(2**53) + 1, 2**53 - 1)
plain = st.text("abcXYZ019_.:-", max_size=12)


@st.composite
def plain_events(draw: st.DrawFn) -> tuple[int, Event, str | None]:
    """Events the native path must write itself: safe integers, times from 1970 to 9999, no
    revoke, a trigger of the plain characters (or none)."""
    times = st.integers(0, LAST_MS)
    lease = Lease(
        holder=draw(st.text(max_size=12)),  # any name: the entry holds its pseudonym
        fencing_token=draw(safe),
        owner_digest=draw(st.binary(min_size=32, max_size=32)),
        expires_at=draw(times),
        scope=draw(st.one_of(st.none(), st.text(max_size=12))),
        lease_id=draw(safe),
    )
    event = Event(
        kind=draw(st.sampled_from([k for k in EventKind if k is not EventKind.REVOKE])),
        lease=lease,
        time=draw(times),
        expires_at=draw(times),
        lifecycle_end=draw(times),
        capacity=draw(safe),
        trigger=draw(st.one_of(st.none(), plain)),
    )
    digest = draw(st.one_of(st.none(), st.just(hashlib.sha256(b"r").hexdigest())))
    return draw(safe), event, digest


@settings(max_examples=400, deadline=None)
@given(plain_events())
def test_a_plain_entry_is_written_by_the_native_path_as_python_writes_it(
    case: tuple[int, Event, str | None],
) -> None:
    index, event, digest = case
    made = _native.entry_bytes(*_native_args(index, event, "job", digest))
    assert made is not None
    assert made == encode_entry(index, event, NAMES, "job", digest)


def _event(**changes: object) -> Event:
    lease = Lease("worker-1", 7, b"\x01" * 32, 61_000, scope="s", lease_id=12)
    fields: dict[str, object] = {
        "kind": EventKind.ACQUIRE,
        "lease": lease,
        "time": 1_000,
        "expires_at": 61_000,
        "lifecycle_end": 86_401_000,
        "capacity": 1,
        "trigger": "ttl",
    }
    fields.update(changes)
    return Event(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "event",
    [
        _event(),
        _event(time=0, expires_at=LAST_MS, lifecycle_end=951_782_400_000),  # 2000-02-29
        _event(trigger=None, kind=EventKind.COMPLETE),
        _event(trigger="", kind=EventKind.SCOPE_RELEASE),
        _event(lease=Lease("w", 2**53 - 1, b"\x00" * 32, 5, None, 0)),
    ],
)
def test_the_native_path_writes_plain_entries_itself(event: Event) -> None:
    made = _native.entry_bytes(*_native_args(41, event, "job", "ab" * 32))
    assert made is not None
    assert made == encode_entry(41, event, NAMES, "job", "ab" * 32)


@pytest.mark.parametrize(
    "event",
    [
        _event(trigger="scope dead"),  # RFC 8785 would write it as it is, the fast path won't
        _event(trigger="ttl\u00e9"),
        _event(time=-1),
        _event(lifecycle_end=LAST_MS + 1),  # the year 10000
        _event(capacity=2**53),
        _event(capacity=True),
    ],
)
def test_the_native_path_declines_what_it_does_not_write(event: Event) -> None:
    assert _native.entry_bytes(*_native_args(41, event, "job", None)) is None


def test_entry_bytes_checks_its_arity() -> None:
    with pytest.raises(TypeError, match="15 arguments"):
        _native.entry_bytes(1, "acquire")  # type: ignore[call-arg]


def _frontier(size: int) -> tuple[CompactRange, _native.Frontier]:
    """A Python and a native frontier of ``size`` random leaves' tree, loaded from its hashes."""
    hashes = [secrets.token_bytes(32) for _ in range(size.bit_count())]
    return CompactRange(size, list(hashes)), _native.Frontier(size, hashes)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**40), st.lists(st.binary(max_size=600), max_size=40))
def test_a_frontier_appends_and_roots_as_the_compact_range(size: int, leaves: list[bytes]) -> None:
    reference, native = _frontier(size)
    assert native.size == size and native.hashes() == reference.hashes()
    assert native.root() == reference.root()
    for data in leaves:
        leaf, nodes = native.append_entry(data)
        assert leaf == leaf_hash(data) == hashlib.sha256(b"\x00" + data).digest()
        assert (leaf, nodes) == reference.append_entry(data)
        assert native.root() == reference.root() and native.size == reference.size
    assert native.append(b"\x07" * 32) == reference.append(b"\x07" * 32)
    assert native.hashes() == reference.hashes()


def test_an_empty_frontier_has_the_empty_root() -> None:
    assert _native.Frontier(0, []).root() == EMPTY_ROOT == CompactRange().root()


@pytest.mark.parametrize(
    ("size", "hashes", "message"),
    [
        (3, [b"\x00" * 32], "one hash per set bit"),
        (1, [b"\x00" * 31], "32 bytes"),
        (1, ["x" * 32], "32 bytes"),
    ],
)
def test_a_frontier_refuses_hashes_that_do_not_tile_its_size(
    size: int, hashes: list[object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _native.Frontier(size, hashes)  # type: ignore[arg-type]


def test_a_frontier_refuses_a_size_that_is_not_one() -> None:
    with pytest.raises(OverflowError):
        _native.Frontier(-1, [b"\x00" * 32] * 64)
    with pytest.raises(TypeError):
        _native.Frontier(1.0, [b"\x00" * 32])  # type: ignore[arg-type]


def test_a_frontier_refuses_a_leaf_that_is_not_a_hash() -> None:
    native = _native.Frontier(0, [])
    with pytest.raises(ValueError, match="32 bytes"):
        native.append(b"short")
    with pytest.raises(TypeError, match="bytes"):
        native.append_entry("text")  # type: ignore[arg-type]
    assert native.size == 0


def _decisions(count: int, seed: int) -> list[tuple[Resource, Decision, bool]]:
    """Grants, renewals with scopes and expiries of several resources, some unpositioned; the
    same ones for the same seed (recording a grant sets its lease's id)."""
    draw, made = random.Random(seed), []
    for n in range(count):
        res = Resource("tenant-a", f"job-{n % 5}", capacity=1 + n % 3, lifecycle_end=9_000_000)
        lease = Lease(f"worker-{n % 4}", n + 1, draw.randbytes(32), 60_000 + n, scope=None)
        if n % 3 == 0:
            lease.scope = f"scope-{n % 2}"
        kinds = [EventKind.ACQUIRE, EventKind.RENEW, EventKind.EXPIRE]
        events = [
            Event(kinds[(n + k) % 3], lease, 1_000 + n, 60_000 + n, 9_000_000, 1, trigger=None)
            for k in range(1 + n % 2)
        ]
        made.append((res, Decision(Outcome.GRANTED, events, lease), n % 4 != 3))
    return made


def test_a_native_recorder_makes_the_same_changes_as_the_python_one() -> None:
    size = 1_234_567
    hashes = [secrets.token_bytes(32) for _ in range(size.bit_count())]
    master = secrets.token_bytes(32)
    python = Recorder(CompactRange(size, list(hashes)), master, native=False)
    native = Recorder(CompactRange(size, list(hashes)), master, native=True)
    assert isinstance(python.tree, CompactRange)
    assert isinstance(native.tree, _native.Frontier)
    seed = secrets.randbits(32)
    for one, two in zip(_decisions(60, seed), _decisions(60, seed), strict=True):
        assert python.record(*one) == native.record(*two)
        assert python.position() == native.position()
    native.tree = CompactRange(size, list(hashes))  # a reload: native again, the root forgotten
    assert isinstance(native.tree, _native.Frontier) and native.tree.size == size
    reloaded = Recorder(CompactRange(size, hashes), master, native=False)
    assert native.position() == reloaded.position()
