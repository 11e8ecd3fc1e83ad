"""The step that keys stored input digests (docs/decisions/0010, addendum): shared by both
backends, whose migrations select the rows and write back what these functions return.

Before it, ``idempotency.request_digest`` and the resources' ``fingerprint`` and
``completed_fingerprint`` were plain SHA-256 of the caller's input, so a stolen database let
anyone test guessed names against them. Each becomes ``HMAC(lookup, kind ‖ 0 ‖ tenant digest ‖
old digest)`` (:meth:`~ledger.keys.names.NameCodec.keyed_in`) — exactly what the server computes for
a new call from the same input, so replays, fingerprints and queued waiters carry on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ledger.keys.names import FINGERPRINT, REQUEST_INPUT, NameCodec
from ledger.keys.sealing import WAITER_CALL

Row = Sequence[Any]


def request(names: NameCodec, tenant: bytes, digest: bytes) -> bytes:
    """An idempotency row's ``request_digest``, keyed."""
    return names.keyed_in(REQUEST_INPUT, tenant, bytes(digest))


def fingerprint(names: NameCodec, tenant: bytes, digest: bytes | None) -> bytes | None:
    """A resource row's ``fingerprint`` or ``completed_fingerprint``, keyed (None stays)."""
    return None if digest is None else names.keyed_in(FINGERPRINT, tenant, bytes(digest))


def waiter_call(names: NameCodec, waiter_id: str, tenant: bytes, sealed: bytes) -> bytes:
    """A waiter row's sealed call with the request digest inside it keyed, sealed again."""
    row = waiter_id.encode()
    stored = json.loads(names.open(WAITER_CALL, row, bytes(sealed)))
    if stored.get("digest") is None:
        return bytes(sealed)
    stored["digest"] = request(names, tenant, bytes.fromhex(stored["digest"])).hex()
    return names.seal(WAITER_CALL, row, json.dumps(stored).encode())


def requests(names: NameCodec, found: Iterable[Row]) -> list[tuple[Any, ...]]:
    """Rows of ``tenant, request_id, request_digest`` → the arguments that set each one's
    digest keyed: ``(request_digest, tenant, request_id)``."""
    return [(request(names, t, digest), t, q) for t, q, digest in found]


def fingerprints(names: NameCodec, found: Iterable[Row]) -> list[tuple[Any, ...]]:
    """Rows of ``tenant, fingerprint, completed_fingerprint, *key`` → the arguments that set
    both keyed: ``(fingerprint, completed_fingerprint, *key)`` (``key``: where the row is)."""
    return [
        (fingerprint(names, t, bound), fingerprint(names, t, done), *key)
        for t, bound, done, *key in found
    ]


def waiter_calls(names: NameCodec, found: Iterable[Row]) -> list[tuple[Any, ...]]:
    """Rows of ``waiter_id, tenant, call`` → the arguments that set each call sealed again:
    ``(call, waiter_id)``."""
    return [(waiter_call(names, w, t, call), w) for w, t, call in found]
