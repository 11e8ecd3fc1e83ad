"""How the routes read a request (api/requests.py): the headers they need in one pass,
the body straight from the ASGI messages — the same values Starlette's own reading gives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import Request
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import ClientDisconnect

from api import requests
from api.refusals import InputError
from api.requests import BODY_KEY, header, read_body
from ledger.lease.provenance import UNPARSED
from verify import ijson

READ = ["accept-provenance", "authorization", "content-length", "content-type", "tenure-namespace"]
NAMES = st.sampled_from([*READ, "host", "x-other", "accept"])
VALUES = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=8)


def request(headers: list[tuple[bytes, bytes]], messages: list[dict[str, Any]]) -> Request:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    return Request(scope, receive)


@given(st.lists(st.tuples(NAMES, VALUES), max_size=8))
def test_header_is_starlettes_lookup(pairs: list[tuple[str, str]]) -> None:
    """Any mix of headers, repeated or not: the first of each, as ``request.headers.get``."""
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in pairs]
    fast, plain = request(raw, []), request(raw, [])
    for name in [*READ, "host", "x-other"]:
        assert header(fast, name) == plain.headers.get(name)


def test_body_in_chunks_is_kept_for_later_reads() -> None:
    chunks = [b'{"resource":', b"", b' "r"}']
    messages = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    messages.append({"type": "http.request", "body": b"", "more_body": False})
    req = request([(b"content-type", b"application/json")], messages)
    body = asyncio.run(read_body(req, 100))
    assert body == b"".join(chunks)
    assert req.scope[BODY_KEY] == body
    assert asyncio.run(req.body()) == body  # no message is read twice
    assert asyncio.run(read_body(req, 100)) == body


def test_body_over_the_limit_mid_stream_is_413() -> None:
    messages = [{"type": "http.request", "body": b"x" * 60, "more_body": True}] * 2
    with pytest.raises(InputError) as refused:
        asyncio.run(read_body(request([], messages), 100))
    assert refused.value.status == 413


def test_declared_length_over_the_limit_is_413_before_reading() -> None:
    with pytest.raises(InputError) as refused:
        asyncio.run(read_body(request([(b"content-length", b"101")], []), 100))
    assert refused.value.status == 413


def test_wrong_content_type_is_415() -> None:
    with pytest.raises(InputError) as refused:
        asyncio.run(read_body(request([(b"content-type", b"text/plain")], []), 100))
    assert refused.value.status == 415


def test_disconnect_while_reading() -> None:
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_body(request([], [{"type": "http.disconnect"}]), 100))


_keys = st.sampled_from(['"a"', '"b"', '"\\u0061"', '"a\\"b"', '"é"', '"{"', '"x:"'])
_values = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["true", "false", "null", "1e400", "NaN", "-0", "1E2", '"\\ud800"', "[1]"]),
    st.text(max_size=6).map(lambda text: json.dumps(text, ensure_ascii=False)),
)
_space = st.sampled_from(["", " ", "\n\t", "\r "])


@st.composite
def _flat_bodies(draw: st.DrawFn) -> bytes:
    """One object's text, keys drawn from a few (so some repeat, some equal once unescaped)."""
    members = draw(st.lists(st.tuples(_keys, _space, _values), max_size=5))
    text = ",".join(f"{key}{space}:{space}{value}" for key, space, value in members)
    return ("{" + draw(_space) + text + "}").encode("utf-8", "surrogatepass")


def _typed(document: Any) -> Any:
    if isinstance(document, dict):
        return [(key, type(value).__name__, repr(value)) for key, value in document.items()]
    return document


@settings(max_examples=500, deadline=None)
@given(_flat_bodies())
def test_flat_bodies_are_read_as_the_decoder_reads_them(body: bytes) -> None:
    """Duplicate keys refused alike; otherwise the same document, each value of the same type
    (an integer past 64 bits stays an integer), or UNPARSED alike."""
    try:
        document = (
            json.loads(body, object_pairs_hook=ijson.unique_pairs) if b'"' in body else UNPARSED
        )
        expected = ("value", _typed(document))
    except ijson.RepeatedKey as error:
        expected = ("duplicate", error.key)
    except ValueError:
        expected = ("value", _typed(UNPARSED))
    try:
        found = ("value", _typed(requests.refuse_duplicate_keys(body)))
    except InputError as error:
        found = ("duplicate", error.field)
    assert found == expected
