"""orjson writes the answers' JSON and must write exactly the bytes ``json`` wrote.

``verify.jcs.encode_sorted`` (the RFC 8785 fast path, sorted keys) and ``api.responses.dumps_plain``
(the envelope's ``data``, insertion order) use orjson where the server's extra installed it; for
every value ``verify.jcs.is_plain`` accepts, their bytes must equal the ``json`` module's, and
what orjson refuses must be answered as ``json`` answered it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import rfc8785
from fastapi.responses import Response
from hypothesis import given, settings
from hypothesis import strategies as st

from api import requests
from api.refusals import InputError
from api.responses import answer_response, dumps, dumps_plain
from verify import jcs
from verify.errors import MalformedInput

# Every code point, lone surrogates included, and keys that sort differently by UTF-16 units.
_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF))
_key = _text | st.sampled_from(["\ue000", "\U0001f600", "\uffff", "\x7f", "\u2028", "a", "é"])
_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_key, inner, max_size=5),
    max_leaves=30,
)


def test_the_server_extra_brings_orjson() -> None:
    """Without it the fast paths below would compare ``json`` with itself."""
    assert jcs.HAVE_ORJSON


@settings(max_examples=600, deadline=None)
@given(_json)
def test_sorted_bytes_equal_the_json_modules_for_every_plain_value(value: Any) -> None:
    if not jcs.is_plain(value):
        return
    try:
        expected = jcs.encode_json(value)
    except UnicodeEncodeError:
        with pytest.raises(MalformedInput):
            jcs.encode_plain(value)
        with pytest.raises(MalformedInput):
            jcs.canonicalize(value)
        return
    assert jcs.encode_sorted(value) == expected
    assert jcs.encode_plain(value) == expected
    assert jcs.canonicalize(value) == expected == rfc8785.dumps(value)


@settings(max_examples=600, deadline=None)
@given(_json)
def test_the_envelope_data_text_equals_the_json_modules(value: Any) -> None:
    if not jcs.is_plain(value):
        return
    try:
        expected = dumps(value)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            dumps_plain(value)
        return
    assert dumps_plain(value) == expected


def test_what_orjson_refuses_is_answered_as_before() -> None:
    deep: Any = "x"
    for _ in range(300):  # past orjson's 255 levels, well within json's
        deep = {"k": [deep]}
    assert jcs.encode_sorted(deep) == jcs.encode_json(deep) == rfc8785.dumps(deep)
    assert dumps_plain(deep) == dumps(deep)
    with pytest.raises(MalformedInput):
        jcs.encode_plain({"a": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        dumps_plain({"a": ["\udfff"]})


@pytest.mark.parametrize(
    "value",
    [
        {"b": '\x00\x1f\x7f\u2028\u2029"\\/\b\f\n\r\t', "a": [True, False, None]},
        {"z": 2**53 - 1, "y": -(2**53) + 1, "x": 0, "\ue000": {}, "": []},
        {"\U0001f600": "\U0001f600", "é": 1},
    ],
)
def test_known_edges(value: dict[str, Any]) -> None:
    assert jcs.encode_sorted(value) == jcs.encode_json(value)
    assert dumps_plain(value) == dumps(value)


def _read(read: Any, body: bytes) -> tuple[str, Any]:
    try:
        return "value", read(body)
    except Exception as error:  # the same kind and words, whatever they are
        return type(error).__name__, str(error)


_documents = _json.map(lambda value: json.dumps(value).encode())
_encoded = st.tuples(_json, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32-le"])).map(
    lambda pair: json.dumps(pair[0], ensure_ascii=False).encode(pair[1], "surrogatepass")
)
_bodies = (
    _documents
    | _encoded
    | st.binary(max_size=40)
    | st.sampled_from(
        [b'{"a":1,"a":2}', b'{"a":{"b":1,"b":1}}', b"\xef\xbb\xbf{}", b'{"a":NaN}', b"", b"[1,]"]
    )
)


@settings(max_examples=600, deadline=None)
@given(_bodies)
def test_the_decoder_made_once_reads_as_json_loads_with_the_hook(body: bytes) -> None:
    """One decoder for every body reads what json.loads read and refuses alike."""
    expected = _read(lambda b: json.loads(b, object_pairs_hook=requests._unique), body)
    assert _read(requests.loads_unique, body) == expected


async def _sent(response: Response) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        messages.append(message)

    async def receive() -> Any:
        raise AssertionError("a response reads nothing")

    await response({"type": "http"}, receive, send)
    return messages


@pytest.mark.parametrize("status", [200, 201, 409, 422, 429, 499, 500, 503, 204, 304, 101])
@pytest.mark.parametrize(
    "headers",
    [None, {}, {"Retry-After": "1"}, {"Content-Type": "text/plain"}, {"content-length": "3"}],
)
def test_an_answer_response_sends_what_starlettes_sends(
    status: int, headers: dict[str, str] | None
) -> None:
    body = b'{"data":{"status":"pass"}}'
    ours = answer_response(body, status, headers)
    theirs = Response(body, status, headers, media_type="application/json")
    assert asyncio.run(_sent(ours)) == asyncio.run(_sent(theirs))
    assert ours.raw_headers == theirs.raw_headers and ours.headers == theirs.headers


def _old_check_depth(body: bytes) -> None:
    """The old check_depth: always the walk over the brackets outside strings."""
    depth = 0
    for bracket in requests._BRACKETS.findall(requests._STRINGS.sub(b'""', body)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > requests.MAX_DEPTH:
            raise InputError("too_deep", "")


_brackety = st.lists(
    st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b":", b","]), max_size=150
) | st.integers(20, 45).map(lambda n: [b"[" * n, b'"{{"', b"]" * n])


@settings(max_examples=600, deadline=None)
@given(_brackety.map(b"".join) | _documents)
def test_the_depth_check_refuses_what_it_refused(body: bytes) -> None:
    """check_depth skips its walk when the body opens no more brackets than allowed."""
    assert _read(requests.check_depth, body)[0] == _read(_old_check_depth, body)[0]


def test_the_depth_check_still_refuses_deep_bodies() -> None:
    with pytest.raises(InputError, match="deeper than 32"):
        requests.check_depth(b"[" * 33 + b"]" * 33)
    requests.check_depth(b"[" * 32 + b"]" * 32 + b'"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["')
