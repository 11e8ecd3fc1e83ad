"""The lease service's request and answer types, and the secrets it draws (DESIGN §1, §3.2)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from base64 import urlsafe_b64encode
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.lease.leases import Outcome
from ledger.lease.tokens import OWNER_TOKEN_PREFIX, mint, secret_digest
from verify.jcs import canonicalize


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def owner_digest(token: str) -> bytes:
    return secret_digest(token)


def new_owner_token() -> str:
    """256 random bits (DESIGN §1), returned once and stored only as its SHA-256."""
    return mint(OWNER_TOKEN_PREFIX)


@dataclass(frozen=True, slots=True)
class Limits:
    ttl_max_seconds: int = 3600
    lifecycle_seconds: int = 86400
    idempotency_seconds: int = 86400
    wait_max_seconds: int = 60
    result_max_bytes: int = 32 * 1024

    def as_data(self) -> dict[str, int]:
        return {
            "ttlMaxSeconds": self.ttl_max_seconds,
            "lifecycleSeconds": self.lifecycle_seconds,
            "waitMaxSeconds": self.wait_max_seconds,
            "resultMaxBytes": self.result_max_bytes,
        }


@dataclass(slots=True)
class LeaseCall:
    """One lease operation, validated by the edge (DESIGN §3.2)."""

    op: str
    tenant: str
    resource: str
    holder: str | None = None
    ttl_seconds: int = 30
    owner_token: str | None = None
    fencing_token: int | None = None
    capacity: int | None = None
    wait_seconds: int | None = None
    request_id: str | None = None
    fingerprint: str | None = None
    scope: str | None = None
    result: Any = None
    key_digest: str | None = None
    """Hex SHA-256 of the API key the call came with: a waiter is refused, not served, once
    its key is revoked (the key's tenant may live on under a rotated key)."""

    def digest(self) -> bytes:
        """What 'the same input' means for rule 12: every field but the requestId and which
        of the tenant's keys sent it (a retry with a rotated key replays)."""
        fields = asdict(self)
        fields.pop("request_id")
        fields.pop("key_digest")
        if self.owner_token is not None:
            fields["owner_token"] = owner_digest(self.owner_token).hex()
        return hashlib.sha256(canonicalize(fields)).digest()


@dataclass(slots=True)
class Answer:
    data: dict[str, Any]
    outcome: Outcome
    fresh_grant: bool = False
    entry: bytes | None = None
    """The exact bytes of the ledger entry this call appended (or, replayed, cited), if any."""
    pseudonyms: dict[str, str] | None = None
    """The pseudonyms that entry names, carried up for the answer's credential."""
    owner_token: str | None = None
    """A grant's owner token (DESIGN §1): never part of ``data`` — neither stored with the
    request (rule 12) nor hashed into the receipt — and put on the wire by the edge. A replay
    carries it while its lease is live; the edge returns it only if the requestId carries 128
    random bits (docs/decisions/0007)."""
    cite: bool = False
    """The entry of ``data.ledger.logIndex`` is to be read back for the receipt (a replay, or a
    grant another transaction made for a waiter)."""


@dataclass(slots=True, eq=False)  # two waiters are never the same one, whatever they ask
class Waiter:
    """Rule 9's waiter as the process holding its caller sees it: the call and the future its
    caller awaits. The queue itself is the storage's ``waiters`` table
    (``ledger/lease/waits.py``)."""

    call: LeaseCall
    future: asyncio.Future[Answer]
    waiter_id: str = field(default_factory=lambda: secrets.token_hex(16))
    """128 random bits: names the row, and derives the owner token of a grant (0007)."""
    granted: Answer | None = None
    """Set by this process's writer when its transaction grants the waiter (before commit)."""
    refused: KeyRevoked | None = None
    """Set instead when its API key was revoked before a slot came: it is answered 401."""

    @property
    def abandoned(self) -> bool:
        """The caller is gone (cancelled): grant it no slot."""
        return self.future.cancelled()


class StorageUnavailable(Exception):
    """The ledger cannot be written: answer 503 with status unknown."""


class KeyRevoked(Exception):
    """The API key a waiting call came with was revoked before the call was served: 401,
    and nothing was granted or recorded for it."""


REQUEST_LABEL = b"tenure/owner/request\x00"
WAITER_LABEL = b"tenure/owner/wait\x00"


def derived_owner_token(master: bytes, label: bytes, *parts: str) -> str:
    """An owner token the server can compute again (docs/decisions/0007): HMAC-SHA-256 under the
    master secret over ``label`` and the NUL-separated ``parts`` (tenant and requestId, or the
    waiter id), in the shape of :func:`new_owner_token`. Stored only as its digest, like any."""
    message = label + b"\x00".join(part.encode() for part in parts)
    mac = hmac.digest(master, message, "sha256")
    return OWNER_TOKEN_PREFIX + urlsafe_b64encode(mac).rstrip(b"=").decode()
