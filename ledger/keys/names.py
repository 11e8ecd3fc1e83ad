"""Names at rest (docs/decisions/0010): keyed lookup digests and sealed names, above the seam.

The state tables of both backends hold no clear name (tenant, resource, holder, scope, request
id) and no clear stored answer. A row is found by a keyed digest of its name, and a name that
must come back (a resume packet, a scope listing, a replayed answer, a waiter's call) is stored
sealed with ChaCha20-Poly1305 under associated data that names the table and the row's digests,
so a ciphertext cannot be moved to another row. Both subkeys derive from one 32-byte names key
kept beside the pseudonym secret in the keys folder (``ledger/keys/keyring.py``); a stolen database
file reveals no more than the public ledger.
"""

from __future__ import annotations

import hmac
import json
import os
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from ledger.keys.keyed import KeyedSha256

DIGEST_BYTES = 16
"""Lookup digests are HMAC-SHA256 truncated to 128 bits."""
NONCE_BYTES = 12
LOOKUP_LABEL = b"tenure/names/lookup\x00"
SEAL_LABEL = b"tenure/names/seal\x00"
REQUEST_INPUT = b"request-input"
"""Kind of :meth:`NameCodec.keyed` for rule 12's digest of a call's input."""
FINGERPRINT = b"fingerprint"
"""Kind of :meth:`NameCodec.keyed` for a fingerprint's SHA-256 (rule 11)."""
_REMEMBERED = 1024  # digests kept before the memo starts over (one HMAC per name per decision)


class SealError(Exception):
    """A sealed value does not open under this key and row (wrong key, moved or altered)."""


class NameCodec:
    """The names key's two subkeys: lookup digests (HMAC) and sealing (AEAD)."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError(f"the names key must be 32 bytes, found {len(key)}")
        self._lookup = hmac.digest(key, LOOKUP_LABEL, "sha256")
        self._lookup_mac = KeyedSha256(self._lookup)
        self._aead = ChaCha20Poly1305(hmac.digest(key, SEAL_LABEL, "sha256"))
        self._known: dict[tuple[bytes, str, str], bytes] = {}
        self._pairs: dict[tuple[str, str], tuple[bytes, bytes]] = {}
        self._sealed: dict[tuple[object, ...], bytes] = {}

    @property
    def check(self) -> str:
        """A value the ledger records when its names are sealed, to tell its key from another
        (hex of a digest under the lookup subkey; reveals nothing of the key)."""
        return hmac.digest(self._lookup, b"check\x00", "sha256")[:DIGEST_BYTES].hex()

    def tenant(self, tenant: str) -> bytes:
        """The tenant's lookup digest."""
        return self._digest(b"tenant", "", tenant)

    def resource(self, tenant: str, name: str) -> bytes:
        """A resource name's lookup digest within its tenant."""
        return self._digest(b"resource", tenant, name)

    def resource_key(self, tenant: str, name: str) -> tuple[bytes, bytes]:
        """``(tenant, resource)`` digests together, remembered as a pair: a lease event needs
        them for its read, its resource row and its lease row."""
        key = self._pairs.get((tenant, name))
        if key is None:
            if len(self._pairs) >= _REMEMBERED:
                self._pairs.clear()
            key = self._pairs[(tenant, name)] = (self.tenant(tenant), self.resource(tenant, name))
        return key

    def known_key(self, tenant: str, name: str, key: tuple[bytes, bytes]) -> None:
        """Remember ``key`` as :meth:`resource_key` of ``(tenant, name)``: the digests of a row
        whose sealed column, bound to them, opened to those names (a sweep's read), so its
        writes need not digest them again."""
        if len(self._pairs) >= _REMEMBERED:
            self._pairs.clear()
        self._pairs[(tenant, name)] = key

    def scope(self, tenant: str, name: str) -> bytes:
        return self._digest(b"scope", tenant, name)

    def lookup(self, kind: bytes, tenant: str, name: str) -> bytes:
        """A name's lookup digest of ``kind`` within its tenant, where the table's module names
        the kind (a stored request's: ``ledger/keys/idempotency.py``)."""
        return self._digest(kind, tenant, name)

    def keyed(self, kind: bytes, tenant: str, value: bytes) -> bytes:
        """An unkeyed digest of a caller's input (``kind``: :data:`REQUEST_INPUT`,
        :data:`FINGERPRINT`) keyed for its tenant: compared for equality, never looked up, and
        no dictionary of names can be tested against it without the key."""
        return self.keyed_in(kind, self.tenant(tenant), value)

    def keyed_in(self, kind: bytes, tenant_digest: bytes, value: bytes) -> bytes:
        """:meth:`keyed` given the tenant's digest (a migration has only the row's)."""
        return self._lookup_mac.digest(kind + b"\x00" + tenant_digest + value)

    def _digest(self, kind: bytes, tenant: str, name: str) -> bytes:
        known = self._known.get((kind, tenant, name))
        if known is None:
            if len(self._known) >= _REMEMBERED:
                self._known.clear()
            owner = self.tenant(tenant) if kind != b"tenant" else b""
            message = kind + b"\x00" + owner + name.encode()
            known = self._lookup_mac.digest(message)[:DIGEST_BYTES]
            self._known[(kind, tenant, name)] = known
        return known

    def seal(self, table: bytes, row: bytes, plain: bytes) -> bytes:
        """``nonce ‖ ciphertext`` of ``plain``, bound to ``table`` and the row's digests."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plain, table + b"\x00" + row)

    def open(self, table: bytes, row: bytes, sealed: bytes) -> bytes:
        """What :meth:`seal` sealed for this table and row; :class:`SealError` otherwise."""
        try:
            nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
            return self._aead.decrypt(bytes(nonce), bytes(body), table + b"\x00" + row)
        except (InvalidTag, ValueError) as error:
            raise SealError(f"a sealed {table.decode()} value does not open") from error

    def seal_json(self, table: bytes, row: bytes, value: list[str | None]) -> bytes:
        """:meth:`seal` of a list of names as JSON, remembered (a bounded memo): the same names
        in the same row get the same sealed bytes back, so a writer that sealed them before
        taking the ledger's lock (:meth:`~ledger.storage.WriterStrategy.warm_lease`) only looks
        them up inside it (docs/decisions/0012). Sealing one plaintext under one key and associated
        data twice with one nonce reveals nothing but that it is the same, which the row's
        digest already says.
        """
        key = (table, row, *value)
        sealed = self._sealed.get(key)
        if sealed is None:
            if len(self._sealed) >= _REMEMBERED:
                self._sealed.clear()
            plain = names_json(value).encode()
            sealed = self._sealed[key] = self.seal(table, row, plain)
        return sealed

    def open_json(self, table: bytes, row: bytes, sealed: bytes) -> Any:
        return json.loads(self.open(table, row, sealed))


def names_json(value: list[str | None]) -> str:
    """``json.dumps(value)`` of a list of names, byte for byte, without the encoder's Python
    layers (~0.5 µs against ~2.5; two per lease event)."""
    return "[" + ", ".join(["null" if name is None else _quoted(name) for name in value]) + "]"


NAMES_CHECK = "names_check"
"""The ``meta`` key holding :attr:`NameCodec.check` of the key that sealed the ledger."""


def check_key(names: NameCodec, recorded: str | None) -> None:
    """Refuse a names key other than the one that sealed the ledger: its digests would find
    no row and its seals open none."""
    if recorded is not None and recorded != names.check:
        from ledger.storage import StorageError

        raise StorageError(
            "the names key (keys/names.key) is not the one that sealed this ledger's state:"
            " restore that key file"
        )


def needs_names(names: NameCodec | None) -> NameCodec:
    """The names key, which every read or write of a backend's state tables needs."""
    if names is None:
        from ledger.storage import StorageError

        raise StorageError("the ledger's state is sealed: open it with the names key (keys/)")
    return names
