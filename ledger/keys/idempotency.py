"""Rule 12's stored request: its key, its row and the record read back, for both backends.

A remembered request is found by its tenant's and its requestId's lookup digests and holds the
keyed digest of the call's input and the first answer, sealed to the row (docs/decisions/0010).
``ledger/sqlite/`` and ``ledger/postgres/`` bind :func:`key` and :func:`row` to their own
statements over :data:`COLUMNS` and hand what they select to :func:`record`.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.changes import RememberRequest
from ledger.keys.names import NameCodec
from ledger.storage import RequestRecord

TABLE = b"idempotency"
"""The table, and the associated data's label of a sealed answer."""
COLUMNS = "tenant, request_id, request_digest, answer, created_at"
"""A stored request's columns, in the order :func:`row` gives and :func:`record` takes."""
_KIND = b"request"
"""The lookup digest's kind of a requestId (:meth:`~ledger.keys.names.NameCodec.lookup`)."""


def key(codec: NameCodec, tenant: str, request_id: str) -> tuple[bytes, bytes]:
    """``tenant, request_id`` digests: the key of a stored request."""
    return codec.tenant(tenant), codec.lookup(_KIND, tenant, request_id)


def row(codec: NameCodec, change: RememberRequest) -> tuple[bytes, bytes, bytes, bytes, int]:
    """The row of :data:`COLUMNS` that remembers ``change``, the answer sealed to its key."""
    t, q = key(codec, change.tenant, change.request_id)
    answer = codec.seal(TABLE, t + q, change.answer_json.encode())
    return (t, q, change.digest, answer, change.created_at)


def record(codec: NameCodec, found: Any) -> RequestRecord:
    """A selected row of :data:`COLUMNS` → the record, its answer opened."""
    t, q, digest, answer, created_at = found
    clear = codec.open(TABLE, bytes(t) + bytes(q), bytes(answer))
    return RequestRecord(bytes(digest), json.loads(clear), created_at)
