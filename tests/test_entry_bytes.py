"""Entry bytes written directly (ledger/lease/entries.py) are the RFC 8785 bytes of the entry
object."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.lease import entries
from ledger.lease.entries import Pseudonyms, encode_entry, entry_fields
from ledger.lease.leases import Event, EventKind, Lease, Revocation
from verify.errors import MalformedInput
from verify.jcs import MAX_SAFE_INTEGER, canonicalize

NAMES = Pseudonyms.derive(b"m" * 32, "tenant-a")
ints = st.one_of(st.integers(0, 2**40), st.integers(-(2**60), 2**60))
times = st.integers(0, 253_402_300_799_999)  # up to 9999-12-31T23:59:59.999Z
text = st.text(max_size=12)
triggers = st.one_of(st.none(), st.sampled_from(["ttl", "lifecycle", "scope_dead"]), text)


@st.composite
def events(draw: st.DrawFn) -> tuple[int, Event, str, str | None]:
    lease = Lease(
        holder=draw(text),
        fencing_token=draw(ints),
        owner_digest=draw(st.binary(min_size=32, max_size=32)),
        expires_at=draw(times),
        scope=draw(st.one_of(st.none(), text)),
        lease_id=draw(ints),
    )
    revocation = draw(st.one_of(st.none(), st.builds(Revocation, text, text)))
    event = Event(
        kind=draw(st.sampled_from(list(EventKind))),
        lease=lease,
        time=draw(times),
        expires_at=draw(times),
        lifecycle_end=draw(times),
        capacity=draw(ints),
        trigger=draw(triggers),
        revocation=revocation,
    )
    digest = draw(st.one_of(st.none(), st.just(hashlib.sha256(b"r").hexdigest())))
    return draw(ints), event, draw(text), digest


@settings(max_examples=400, deadline=None)
@given(events())
def test_entry_bytes_are_the_canonical_bytes_of_the_entry_object(
    case: tuple[int, Event, str, str | None],
) -> None:
    index, event, resource, digest = case
    fields = entry_fields(index, event, NAMES, resource, digest)
    if any(type(v) is int and abs(v) > MAX_SAFE_INTEGER for v in fields.values()):
        with pytest.raises(MalformedInput):
            canonicalize(fields)
        with pytest.raises(MalformedInput):
            encode_entry(index, event, NAMES, resource, digest)
        return
    assert encode_entry(index, event, NAMES, resource, digest) == canonicalize(fields)


def test_a_plain_entry_is_written_without_canonicalizing(monkeypatch: pytest.MonkeyPatch) -> None:
    lease = Lease("worker-1", 7, b"\x01" * 32, 61_000, scope="s", lease_id=12)
    event = Event(EventKind.ACQUIRE, lease, 1_000, 61_000, 86_401_000, 1, trigger="ttl")
    expected = canonicalize(entry_fields(12, event, NAMES, "job", None))

    def refuse(value: object) -> bytes:
        raise AssertionError("the direct path canonicalized")

    monkeypatch.setattr(entries, "canonicalize", refuse)
    assert encode_entry(12, event, NAMES, "job") == expected
