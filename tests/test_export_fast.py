"""The audit's short reads judge every input exactly as the strict readers do.

``tenure audit`` reads each export line and each entry's bytes the short way when they are in
the shape tenure writes (``verify/export_fast.py``: the audit ~20% faster); anything else goes
to the strict readers.
An auditor relies on the verdict, and on its wording, being the same either way: here every
entry and line, honest or tampered in the ways RFC 7493 and RFC 8785 forbid, is read with the
short path and with it switched off, and the records, events and violations must match.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import verify.export_records as records
from verify.errors import MalformedInput
from verify.jcs import canonicalize

DIGEST = "ab" * 32
TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)  # controls, non-ASCII


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    """A v1 entry: what the ledger writes, every value drawn."""
    time = "2026-12-04T23:27:33.417Z"
    entry = {
        "v": 1,
        "index": draw(st.integers(0, 2**53 - 1)),
        "time": time,
        "kind": draw(st.sampled_from(["acquire", "renew", "release", "expire", "complete"])),
        "tenant": draw(TEXT),
        "resource": draw(TEXT),
        "holder": draw(TEXT),
        "fencingToken": draw(st.integers(1, 2**53 - 1)),
        "expiresAt": time,
        "absoluteExpiresAt": time,
        "capacity": draw(st.integers(1, 5)),
        "ownerTokenDigest": DIGEST,
        "leaseId": draw(st.integers(0, 10**6)),
    }
    if draw(st.booleans()):
        entry["scope"] = draw(TEXT)
    return entry


# Ways to spoil canonical bytes: each leaves JSON a lenient reader might still take.
TAMPER = [
    lambda b: b[:-1] + b',"v":1}',  # a repeated key
    lambda b: b.replace(b'"capacity":', b'"capacity":1e0,"x":', 1),
    lambda b: b.replace(b'"v":1', b'"v":1.0', 1),
    lambda b: b.replace(b'"v":1', b'"v":true', 1),
    lambda b: b.replace(b'"v":1', b'"v":NaN', 1),
    lambda b: b.replace(b'"leaseId":', b'"leaseId":9007199254740993,"y":', 1),
    lambda b: b.replace(b'"holder":"', b'"holder":"\\ud800', 1),  # a lone surrogate
    lambda b: b.replace(b'"holder":"', b'"holder":"\\u0041', 1),  # an escape JCS never writes
    lambda b: b.replace(b"{", b"{ ", 1),
    lambda b: b + b" ",
    lambda b: b.replace(b'"holder":"', b'"holder":"\xff', 1),  # not UTF-8
    lambda b: b.replace(b'"kind"', b'"kind":{"a":1},"kin"', 1),
    lambda b: b"[" + b + b"]",
    lambda b: b,
]


def judged(index: int, leaf: bytes, short: bool) -> Any:
    found: list[tuple[Any, ...]] = []
    with pytest.MonkeyPatch.context() as patch:
        if not short:
            patch.setattr(records, "plain_object", lambda data: None)
        event = records.event_of(index, leaf, lambda *flag: found.append(flag))
    return event, found


@settings(max_examples=300, deadline=None)
@example(entry={"v": 1}, tamper=0, shift=0)  # not an entry at all
@given(entry=entries(), tamper=st.sampled_from(range(len(TAMPER))), shift=st.integers(-1, 1))
def test_an_entry_is_judged_the_same_read_short_or_strict(
    entry: dict[str, Any], tamper: int, shift: int
) -> None:
    leaf = TAMPER[tamper](canonicalize(entry))
    index = entry.get("index", 0) + shift  # the export's index, sometimes not the entry's
    short = judged(index, leaf, True)
    assert short == judged(index, leaf, False)
    if tamper == len(TAMPER) - 1 and shift == 0 and len(entry) > 1:
        assert short[0] is not None and short[1] == []  # the honest entry passes


def entry_line(index: int, leaf: bytes) -> str:
    encoded = base64.b64encode(leaf).decode()
    return f'{{"type":"entry","index":{index},"leaf":"{encoded}"}}\n'


LINES = [
    entry_line(7, b'{"v":1}'),
    entry_line(0, b""),
    entry_line(2**53 - 1, b"x"),
    entry_line(2**53, b"x"),  # beyond I-JSON: the strict reader refuses it
    '{"type":"entry","index":07,"leaf":"eA=="}\n',  # a leading zero is no JSON number
    '{"type":"entry","index":7,"leaf":"eA=="}\x0b',  # whitespace JSON does not know
    '{"type":"entry","index":7,"leaf":"eA=="}\u00a0',
    ' {"type":"entry","index":7,"leaf":"eA=="}\r\n',
    '{"index":7,"type":"entry","leaf":"eA=="}',
    '{"type":"entry","index":7,"leaf":"eA==","leaf":"eQ=="}',
    '{"type":"entry","index":7,"leaf":"e\\u0041=="}',
    '{"type":"entry","index":-7,"leaf":"eA=="}',
    '{"type":"entry","index":7,"leaf":"eA=="',
    "",
]


@pytest.mark.parametrize("line", [*LINES, *(line.encode() for line in LINES)])
def test_an_export_line_is_read_the_same_short_or_strict(
    line: str | bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read(short: bool) -> Any:
        with monkeypatch.context() as patch:
            if not short:
                patch.setattr(records, "entry_record", lambda text: None)
            try:
                return list(records.parse_lines([line]))
            except MalformedInput as error:
                return str(error)

    assert read(True) == read(False)


def test_an_honest_entry_and_line_skip_the_strict_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {
        "v": 1, "index": 3, "time": "2026-12-04T23:27:33.417Z", "kind": "acquire",
        "tenant": "t", "resource": "r", "holder": "h", "fencingToken": 1,
        "expiresAt": "2026-12-04T23:27:38.417Z", "absoluteExpiresAt": "2026-12-05T23:27:33.417Z",
        "capacity": 1, "ownerTokenDigest": DIGEST, "leaseId": 3,
    }  # fmt: skip
    leaf = canonicalize(entry)

    def refuse(*args: Any) -> Any:
        raise AssertionError("the strict reader was asked")

    monkeypatch.setattr(records, "loads", refuse)
    assert list(records.parse_lines([entry_line(3, leaf)])) == [
        {"type": "entry", "index": 3, "leaf": base64.b64encode(leaf).decode()}
    ]
    event = records.event_of(3, leaf, refuse)
    assert event is not None and (event.kind, event.key, event.token) == ("acquire", ("t", "r"), 1)
