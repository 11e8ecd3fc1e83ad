"""orjson, where the server's extra installed it: flat request bodies read faster.

:func:`loads_flat` reads what ``api.requests.loads_unique`` (the reference) reads, or declines
(None); ``tests/test_fast_json.py`` compares the two. The offline verifier never imports this.
"""

from __future__ import annotations

from typing import Any

try:  # the server's extra
    import orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover - exercised where orjson is absent
    HAVE_ORJSON = False


def loads_flat(body: bytes) -> dict[str, Any] | None:
    """The document of a body that is one object of strings, integers, booleans and nulls
    (most lease bodies) with no key repeated; None for any other body, or without orjson.

    orjson reads integers past 64 bits as floats, so a float declines, and so does any body it
    refuses (BOMs, UTF-16, NaN, lone surrogates). With no escaped quote, every quote delimits a
    key or a string value: more strings in the text than in the document is a repeated key.
    """
    if not HAVE_ORJSON or body.count(b"{") != 1 or b"[" in body or b'\\"' in body:
        return None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(document) is not dict:
        return None
    strings = len(document)  # its keys, then its string values
    for value in document.values():
        if type(value) is str:
            strings += 1
        elif type(value) is float:
            return None
    return document if body.count(b'"') == 2 * strings else None
