"""The one strict reader of signed documents: I-JSON, RFC 7493.

Receipts, bundles, keyrings, export lines and the monitor's answers are all read here, so an
offline check is never laxer than the server that refuses the same bytes. Refused, each with a
message naming what: a repeated key in an object (§2.3: which value counts would depend on the
reader), a lone surrogate (§2.1), an integer beyond ±(2**53 - 1) or a number beyond a double
(§2.2), NaN and Infinity (not JSON), bytes that are not UTF-8 (§2.1).

JSON has one number type, so "an integer" is a field's rule, not the parser's: a signature over
the RFC 8785 form cannot tell ``1.0`` from ``1``, and ``require_integers`` refuses the first
where tenure writes an integer. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from verify.errors import MalformedInput
from verify.limits import MAX_SAFE_INTEGER

__all__ = ["DuplicateKey", "NotIJSON", "RepeatedKey", "loads", "require_integers", "unique_pairs"]


class NotIJSON(MalformedInput):
    """The text is not JSON, or is JSON that I-JSON (RFC 7493) forbids."""


class DuplicateKey(NotIJSON):
    """An object names ``key`` twice."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class _Refused(ValueError):
    """Raised inside the decoder's hooks; ``loads`` adds which document."""


class RepeatedKey(_Refused):
    """An object names ``key`` twice (raised by :func:`unique_pairs`)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key[:64]!r} in an object (RFC 7493 §2.3)")
        self.key = key


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return found


def _integer(text: str) -> int:
    value = int(text)
    if abs(value) > MAX_SAFE_INTEGER:
        raise _Refused(f"integer {text[:32]} is beyond ±(2**53 - 1) (RFC 7493 §2.2)")
    return value


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:32]} is beyond a double's range (RFC 7493 §2.2)")
    return value


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(
    object_pairs_hook=unique_pairs,
    parse_int=_integer,
    parse_float=_number,
    parse_constant=_constant,
)


def loads(text: str | bytes, what: str = "document") -> Any:
    """The value of ``text`` (UTF-8 bytes or a str); NotIJSON naming ``what`` and the rule."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise NotIJSON(f"{what} is not UTF-8 (RFC 7493 §2.1): {error}") from error
    else:
        _no_surrogate(text, what)
    try:
        value = _DECODER.decode(text)
    except RepeatedKey as error:
        raise DuplicateKey(f"{what}: {error}", error.key) from error
    except _Refused as error:
        raise NotIJSON(f"{what}: {error}") from error
    except ValueError as error:
        raise NotIJSON(f"{what} is not JSON: {error}") from error
    except RecursionError as error:
        raise NotIJSON(f"{what} nests too deep for a tenure document") from error
    if "\\u" in text:  # only an escape can spell a lone surrogate in valid UTF-8
        _no_escaped_surrogate(value, what)
    return value


def _no_escaped_surrogate(value: Any, what: str) -> None:
    """Walk the value iteratively (no recursion however deep) checking every string and key."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            _no_surrogate(node, what)
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _no_surrogate(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = text[error.start].encode("unicode_escape").decode()
        raise NotIJSON(f"{what}: lone surrogate {bad} in a string (RFC 7493 §2.1)") from error


def require_integers(section: Mapping[str, Any], names: Iterable[str], where: str) -> None:
    """NotIJSON if a field of ``names`` present in ``section`` is a non-integer number: tenure
    writes these as integers, and ``1.0`` signs the same RFC 8785 bytes as ``1``."""
    for name in names:
        value = section.get(name)
        if isinstance(value, float):
            raise NotIJSON(f"{where}.{name} is the number {value!r}; tenure writes an integer")
