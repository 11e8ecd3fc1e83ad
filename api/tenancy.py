"""Who is calling (DESIGN §3.1): an API key, a minted namespace, or the anonymous tenant."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from api.names import minted_namespace
from api.schemas import InputError
from ledger.lease.tokens import API_KEY_PREFIX, NAMESPACE_PREFIX, mint, secret_digest
from ledger.storage import ApiKeyRecord, Storage

ANONYMOUS = "anon"


def mint_namespace() -> str:
    return mint(NAMESPACE_PREFIX)


def create_api_key(storage: Storage, name: str) -> str:
    """Store only the key's SHA-256; the key itself is shown once, to the operator."""
    key = mint(API_KEY_PREFIX)
    storage.add_api_key(ApiKeyRecord(secret_digest(key), name, name, int(time.time() * 1000)))
    return key


class KeyCache:
    """API-key digests to tenants (None: no such key), each remembered for ``ttl`` seconds and
    at most ``size`` of them, least recently used first out: a key revoked by `tenure apikey
    revoke` in another process is refused within ``ttl`` without a restart."""

    def __init__(
        self,
        lookup: Callable[[bytes], str | None],
        ttl: float = 1.0,
        size: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self.ttl = ttl
        self.size = size
        self._clock = clock
        self._found: OrderedDict[bytes, tuple[str | None, float]] = OrderedDict()

    def tenant(self, digest: bytes) -> str | None:
        """The key's tenant, from memory if looked up less than ``ttl`` seconds ago."""
        now = self._clock()
        cached = self._found.get(digest)
        if cached is not None and now - cached[1] < self.ttl:
            self._found.move_to_end(digest)
            return cached[0]
        tenant = self._lookup(digest)
        self._found[digest] = (tenant, now)
        self._found.move_to_end(digest)
        while len(self._found) > self.size:
            self._found.popitem(last=False)
        return tenant


class Tenancy:
    def __init__(self, storage: Storage, require_api_key: bool, anonymous: bool):
        self._require_key = require_api_key
        self._anonymous = anonymous and not require_api_key
        self.keys = KeyCache(storage.api_key_tenant)

    def resolve(self, authorization: str | None, namespace: str | None, sub: str | None) -> str:
        if authorization is not None:
            if namespace is not None:
                raise InputError("ambiguous_tenant", "give an API key or a namespace, not both")
            tenant = "key/" + self._key_tenant(authorization)
            return tenant if sub is None else f"{tenant}/{sub}"
        if sub is not None:
            raise InputError("invalid_value", "tenantId needs an API key", "tenantId")
        if self._require_key:
            raise InputError("unauthorized", "this server requires an API key", status=401)
        if namespace is not None:
            return "ns/" + self._namespace_tenant(namespace)
        if not self._anonymous:
            raise InputError("unauthorized", "the anonymous tenant is turned off", status=401)
        return ANONYMOUS

    @staticmethod
    def key_digest(authorization: str | None) -> str | None:
        """Hex SHA-256 of the Bearer key (its row's key), or None without one: a waiting call
        carries it so that revoking this one key refuses the call before it is served."""
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return None
        return secret_digest(key.strip()).hex()

    def _key_tenant(self, authorization: str) -> str:
        key_digest = self.key_digest(authorization)
        if key_digest is None:
            raise InputError("unauthorized", "Authorization must be 'Bearer <apiKey>'", status=401)
        tenant = self.keys.tenant(bytes.fromhex(key_digest))
        if tenant is None:
            raise InputError("unauthorized", "unknown API key", status=401)
        return tenant

    def _namespace_tenant(self, namespace: str) -> str:
        if not minted_namespace(namespace):
            message = (
                "namespace must be one minted by POST /api/v1/namespaces: 'ns_' and 43 base64url"
                " characters encoding 256 bits"
            )
            raise InputError("invalid_value", message, "namespace")
        return hashlib.sha256(namespace.encode()).hexdigest()[:32]


class RateLimiter:
    """A token bucket per tenant or client address: `rate` requests/s, bursts to twice that
    (DESIGN §3.3). Buckets are kept in least-recently-used order; a bucket that has refilled
    is the same as none and is dropped, and past `max_buckets` the least recently used goes, so
    memory stays bounded however many namespaces are minted."""

    def __init__(self, rate: float, max_buckets: int = 100_000) -> None:
        self.rate = rate
        self.burst = 2 * rate
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def retry_after(self, tenant: str, now: float) -> float | None:
        tokens, last = self._buckets.pop(tenant, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        wait = None
        if tokens < 1:
            wait = (1 - tokens) / self.rate
        else:
            tokens -= 1
        self._buckets[tenant] = (tokens, now)
        self._drop(now)
        return wait

    def _drop(self, now: float) -> None:
        while self._buckets:
            oldest, (tokens, last) = next(iter(self._buckets.items()))
            full = tokens + (now - last) * self.rate >= self.burst
            if not full and len(self._buckets) <= self.max_buckets:
                return
            del self._buckets[oldest]
