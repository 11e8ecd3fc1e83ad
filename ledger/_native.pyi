"""Types of the optional C extension built from native/; see native/answer.c and native/record.c."""

from collections.abc import Callable
from typing import Any

class Answerer:
    """Writes the envelope of a plain eddsa-jcs-2022 answer for one signing key."""

    def __init__(
        self,
        *,
        frame: tuple[bytes, bytes, bytes],
        proof: tuple[bytes, bytes, bytes, bytes, bytes],
        sha256: Callable[[Any], Any],
        sign: Callable[[bytes], bytes],
        secrets: frozenset[str],
        parts: tuple[str, ...],
        labels: tuple[str, str],
        generator: str,
    ) -> None: ...
    def envelope(
        self,
        data: dict[str, Any],
        pseudonyms: dict[str, str] | None,
        request: bytes,
        ledger_label: str,
        ledger_bytes: bytes,
        stamp: bytes,
        owner_token: str | None = None,
        /,
    ) -> bytes | None: ...

def encode_sorted(value: Any) -> bytes | None: ...
def entry_bytes(
    index: int,
    kind: str,
    capacity: int,
    token: int,
    lease_id: int,
    time: int,
    expires: int,
    lifecycle: int,
    tenant: str,
    resource: str,
    holder: str,
    owner_digest: bytes,
    scope: str | None,
    trigger: str | None,
    result: str | None,
    /,
) -> bytes | None: ...

class Frontier:
    """The compact range of RFC 9162 §2.1.1 (verify/compact.py's CompactRange), hashed by
    OpenSSL's SHA256; only present where the module found it."""

    def __init__(self, size: int, hashes: list[bytes]) -> None: ...
    @property
    def size(self) -> int: ...
    def append(self, leaf_hash: bytes, /) -> list[tuple[int, int, bytes]]: ...
    def append_entry(self, entry: bytes, /) -> tuple[bytes, list[tuple[int, int, bytes]]]: ...
    def root(self) -> bytes: ...
    def hashes(self) -> list[bytes]: ...
