"""The writer's shortcuts give the bytes of what they replace: the names a row seals,
the instants and the hashes an entry and an answer spell."""

from __future__ import annotations

import base64
import json
import time

from hypothesis import given
from hypothesis import strategies as st

from ledger.keys.names import NameCodec, names_json
from ledger.log import text
from ledger.log.text import b64, iso
from ledger.sqlite import pending


@given(st.lists(st.none() | st.text(), max_size=5))
def test_names_json_is_json_dumps(value: list[str | None]) -> None:
    assert names_json(value) == json.dumps(value)


def test_names_json_escapes_as_json_does() -> None:
    value = ['a"b\\c', "ünï\u2028", "\x00\n", None, ""]
    assert names_json(value) == json.dumps(value)
    assert json.loads(names_json(value)) == value


@given(st.integers(min_value=0, max_value=253_402_300_799_999))
def test_iso_formats_every_millisecond(ms: int) -> None:
    seconds, millis = divmod(ms, 1000)
    expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
    assert iso(ms) == expected
    assert iso(ms) == expected  # remembered


def test_iso_memo_starts_over_when_full() -> None:
    start = 1_780_000_000_000
    for ms in range(start, start + 10_000):
        assert iso(ms).endswith(f".{ms % 1000:03d}Z")
        assert len(text._ISO) <= text._ISO_KEPT  # bounded
    assert iso(start) == "2026-05-28T20:26:40.000Z"


@given(st.binary(max_size=80))
def test_b64_is_standard_base64(data: bytes) -> None:
    assert b64(data) == base64.b64encode(data).decode()


def test_a_resource_key_is_its_two_digests() -> None:
    codec = NameCodec(bytes(range(32)))
    for tenant, name in [("a", "x"), ("b", "x"), ("a", "y"), ("a", "x")]:
        pair = codec.resource_key(tenant, name)
        assert pair == (codec.tenant(tenant), codec.resource(tenant, name))
    assert codec.resource_key("a", "x") != codec.resource_key("b", "x")
    assert codec.resource_key("a", "x")[1] != codec.resource_key("a", "y")[1]


def test_a_multi_row_statement_is_made_once() -> None:
    """The driver's statement cache then finds it without hashing a new string each time."""
    head = "INSERT INTO t(a, b) VALUES "
    made = pending.statement(head, 2, 4)
    assert made == head + "(?, ?), (?, ?), (?, ?), (?, ?)"
    assert pending.statement(head, 2, 4) is made
