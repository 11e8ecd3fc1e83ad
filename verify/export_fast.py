"""The two reads an audit makes of every entry, done the short way when the input is in the
shape tenure writes, and declined (None) otherwise, so the strict readers
(``verify.ijson.loads``) judge and word everything else exactly as before.

``entry_record`` reads an export's entry line with one pattern instead of a JSON decode;
``plain_object`` decodes an entry's bytes without the strict decoder's per-value hooks, for a
caller that then requires the exact canonical bytes back (``export_records.event_of``), which no
duplicate key, lone surrogate or number the hooks refuse can give. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

from verify.limits import MAX_SAFE_INTEGER

__all__ = ["entry_record", "plain_object"]

# `tenure export`'s entry line (ledger/log/export.py): these keys in this order, no spaces, an
# integer without leading zeros, standard base64; JSON's own whitespace may follow.
_ENTRY_TEXT = re.compile(
    r'\{"type":"entry","index":(0|[1-9][0-9]{0,15}),"leaf":"([A-Za-z0-9+/]*={0,2})"\}[ \t\n\r]*'
)
_ENTRY_BYTES = re.compile(_ENTRY_TEXT.pattern.encode())
_PLAIN = json.JSONDecoder()


def entry_record(line: str | bytes) -> dict[str, Any] | None:
    """The record ``{"type": "entry", "index": …, "leaf": …}`` that the strict reader would
    make of ``line``, if the line is exactly in the export's own shape; else None."""
    if isinstance(line, bytes):
        found = _ENTRY_BYTES.fullmatch(line)
        if found is None:
            return None
        index, leaf = int(found[1]), found[2].decode("ascii")
    else:
        text = _ENTRY_TEXT.fullmatch(line)
        if text is None:
            return None
        index, leaf = int(text[1]), text[2]
    if index > MAX_SAFE_INTEGER:
        return None
    return {"type": "entry", "index": index, "leaf": leaf}


def plain_object(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object read without the strict checks, or None if it is not UTF-8,
    not JSON, or not an object. Only for bytes the caller then compares with their canonical
    form: the checks skipped here are ones a canonical document passes."""
    try:
        value = _PLAIN.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        return None
    return value if type(value) is dict else None
