"""HMAC-SHA-256 (RFC 2104) under a fixed key, the padded key blocks hashed once.

``hmac.digest`` derives the padded keys and fetches the algorithm from OpenSSL on every call,
~2.6 µs for a short message; the writer takes several per lease event (pseudonyms, lookup
digests) while it holds the ledger's lock (docs/decisions/0012). Copying two hash states
hashed once is ~0.9 µs for the same bytes: ``tests/test_keyed.py`` compares them with
:func:`hmac.digest`.
"""

from __future__ import annotations

import hashlib

BLOCK = 64
"""SHA-256's block size: the key is padded (or first hashed) to it (RFC 2104 §2)."""
_IPAD = bytes(b ^ 0x36 for b in range(256))
_OPAD = bytes(b ^ 0x5C for b in range(256))


class KeyedSha256:
    """``HMAC-SHA-256(key, message)`` for one key and many messages."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(BLOCK, b"\x00")
        self._inner = hashlib.sha256(key.translate(_IPAD))
        self._outer = hashlib.sha256(key.translate(_OPAD))

    def digest(self, message: bytes) -> bytes:
        """The 32-byte MAC of ``message``, equal to ``hmac.digest(key, message, "sha256")``."""
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()
