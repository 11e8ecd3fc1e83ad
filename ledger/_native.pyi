"""Types of the optional C extension built from native/ (issue 10); see native/answer.c."""

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
