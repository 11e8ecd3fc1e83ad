"""orjson reads flat request bodies (``api.accel.fastjson``) and must read what the reference
decoder reads; the offline verifier's RFC 8785 fast path (the ``json`` module) must write what
``rfc8785`` writes; and ``verify/`` must not know orjson at all.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from fastapi.responses import Response
from hypothesis import given, settings
from hypothesis import strategies as st

from api import requests
from api.accel import fastjson
from api.refusals import InputError
from api.responses import answer_response
from verify import ijson, jcs
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
    """Without it the comparisons below would compare the decoder with itself."""
    assert fastjson.HAVE_ORJSON


def test_the_verifier_imports_no_orjson() -> None:
    """A server speed flag has no place in the offline verifier (its own modules; a library it
    uses may still try orjson)."""
    verify = Path(__file__).resolve().parent.parent / "verify"
    for source in sorted(verify.rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "orjson" for n in names), source


@settings(max_examples=600, deadline=None)
@given(_json)
def test_sorted_bytes_equal_rfc8785_for_every_plain_value(value: Any) -> None:
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
    assert jcs.encode_plain(value) == expected
    assert jcs.canonicalize(value) == expected == rfc8785.dumps(value)


def test_deep_nesting_takes_the_fast_path() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = {"k": [deep]}
    assert jcs.canonicalize(deep) == jcs.encode_json(deep) == rfc8785.dumps(deep)
    with pytest.raises(MalformedInput):
        jcs.encode_plain({"a": "\ud800"})


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
    expected = _read(lambda b: json.loads(b, object_pairs_hook=ijson.unique_pairs), body)
    assert _read(requests.loads_unique, body) == expected


_flat = st.dictionaries(
    _text, st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _text, max_size=6
).map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@settings(max_examples=600, deadline=None)
@given(_bodies | _flat | _flat.map(lambda body: body.replace(b"}", b',"a":1,"a":2}')))
def test_the_orjson_reader_reads_what_the_decoder_reads_or_declines(body: bytes) -> None:
    """Where loads_flat answers, its document is the reference decoder's, key order included;
    and the body is refused, or read, alike with the orjson reader on and off."""
    flat = fastjson.loads_flat(body)
    if flat is not None:
        reference = requests.loads_unique(body)
        assert flat == reference and list(flat) == list(reference)
    outcomes = []
    for on in (True, False):
        requests.use_orjson(on)
        try:
            outcomes.append(_read(requests.refuse_duplicate_keys, body))
        finally:
            requests.use_orjson(True)
    assert outcomes[0] == outcomes[1]


def test_the_orjson_reader_reads_a_typical_lease_body() -> None:
    body = b'{"resource":"job-7","holder":"w","ttlSeconds":30,"wait":false,"x":null}'
    assert fastjson.loads_flat(body) == json.loads(body)
    assert fastjson.loads_flat(b'{"a":"1","a":"2"}') is None  # a repeated key: the decoder


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
