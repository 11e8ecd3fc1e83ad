"""RFC 8785 JSON Canonicalization Scheme (JCS), with a fast path (``rfc8785.dumps`` is correct
but pure Python). For exact ``dict``/``list``/``str``/``int``/``bool``/``None`` the C ``json``
encoder writes the same bytes, because:

- §3.2.2.2 string escaping is ``JSON.stringify``'s, the set ``json.dumps(ensure_ascii=False)``
  escapes the same way; lone surrogates are refused by both (UTF-8 encoding fails).
- §3.2.3 sorts keys by UTF-16 code units, ``sort_keys`` by code points: they agree unless a key
  holds a non-BMP character, so such documents take the reference path.
- §3.2.2.3 numbers: integers within ±(2**53 − 1) print alike; floats and larger integers take the
  reference path. ``tests/test_dataintegrity.py`` checks the fast path with hypothesis.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785

from verify.errors import MalformedInput

MAX_SAFE_INTEGER = 2**53 - 1  # RFC 8785 §3.2.2.3, I-JSON (RFC 7493 §2.2)
_BMP_MAX = "\uffff"
_MAX_CONTAINERS = 100_000  # more than any bounded body holds: a cycle, or the reference path

_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
    check_circular=False,  # _is_plain has already walked the whole value
)


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value; MalformedInput if not I-JSON."""
    try:
        plain = _is_plain(value)
    except TypeError:  # a key that is not a string: the reference path says why
        plain = False
    try:
        if plain:
            return encode_json(value)
        return rfc8785.dumps(value)
    except (UnicodeEncodeError, rfc8785.CanonicalizationError) as e:
        raise MalformedInput(f"not canonicalizable as RFC 8785 JSON: {e}") from e
    except RecursionError as e:
        raise MalformedInput("JSON value nested too deeply") from e


def is_plain(value: Any) -> bool:
    """True when :func:`encode_plain` gives ``value``'s RFC 8785 bytes (see module doc).

    Plainness is compositional: every part of a plain value is plain, and a dict of plain values
    under ASCII string keys is plain. An issuer that checked its parts once may therefore encode
    a whole it assembled from them without walking them again.
    """
    try:
        return _is_plain(value)
    except TypeError:  # a key that is not a string
        return False


def encode_plain(value: Any) -> bytes:
    """The RFC 8785 bytes of a value :func:`is_plain` accepted (of parts it accepted, joined
    under ASCII keys); for any other value the bytes may not be canonical: use canonicalize."""
    try:
        return encode_json(value)
    except UnicodeEncodeError as e:  # a lone surrogate, as canonicalize refuses it
        raise MalformedInput(f"not canonicalizable as RFC 8785 JSON: {e}") from e


def encode_json(value: Any) -> bytes:
    """The ``json`` module's sorted, compact UTF-8 text of ``value`` (UnicodeEncodeError for a
    lone surrogate): the fast path's bytes."""
    return _ENCODER.encode(value).encode("utf-8")


_LEAVES = frozenset({str, bool, type(None)})


def _is_plain(value: Any) -> bool:
    """True when the fast path is byte-identical to RFC 8785 for ``value`` (see module doc).

    This walk runs for every signed answer, so it is a flat loop doing the cheapest checks
    first: a container's parts are looked at by one ``for`` over them, a string, bool or None
    by one set lookup of its type; a dict's keys are joined in C (``str.join`` raises TypeError
    for a key that is not a string) and scanned for non-BMP characters at C speed; a bound on
    the containers visited stops a cyclic value (the encoder runs with ``check_circular=False``).
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind in _LEAVES or (kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
    stack, leaves, containers = [value], _LEAVES, 0
    while stack:
        item = stack.pop()
        containers += 1
        if containers > _MAX_CONTAINERS:
            return False
        if type(item) is dict:
            keys = "".join(item)
            if not keys.isascii() and max(keys) > _BMP_MAX:
                return False
            item = item.values()
        for part in item:
            kind = type(part)
            if kind in leaves:
                continue
            if kind is int:
                if not -MAX_SAFE_INTEGER <= part <= MAX_SAFE_INTEGER:
                    return False
            elif kind is dict or kind is list:
                stack.append(part)
            else:
                return False
    return True
