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

from ledger.keys.names import FINGERPRINT, REQUEST_INPUT, NameCodec
from ledger.keys.sealing import WAITER_CALL


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
