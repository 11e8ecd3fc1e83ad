"""What an anonymous-tenant name must look like (DESIGN §3.1).

In the anonymous tenant a resource or scope name is a capability: whoever knows it can take or
release it. So it must carry at least 128 bits, judged conservatively from its shape alone:

0. It is at most 200 characters long (DESIGN §3.1), in every tenant-facing place alike.
1. Its *random part* is its longest suffix of hex digits of one case if that is ≥ 32 characters
   (4 bits each), otherwise its longest suffix of base64url characters (`A-Z a-z 0-9 - _`) if
   that is ≥ 22 characters (6 bits each); anything before it is a free prefix worth nothing.
2. The random part must look drawn at random: at least 8 distinct characters (hex) or 10 and both
   letter cases (base64url); no 10-character substring occurring twice (repeats); no run of 8
   characters each one above or below the previous (sequences such as `abcdefgh`, `98765432`).

`secrets.token_hex(16)` and `secrets.token_urlsafe(16)` pass (the latter fails the letter-case
test about twice in 100,000 draws; draw again). Namespaces have one exact format: `ns_` and the
43 base64url characters of a 256-bit value, as `POST /api/v1/namespaces` mints them.
"""

from __future__ import annotations

import itertools
import re
from base64 import urlsafe_b64decode, urlsafe_b64encode
from functools import lru_cache

HEX_MIN, BASE64URL_MIN = 32, 22
REPEAT, SEQUENCE = 10, 8
MAX_LENGTH = 200
RULE = (
    f"must be at most {MAX_LENGTH} characters and carry ≥ 128 random bits: end in ≥ 32 hex"
    " digits of one case or ≥ 22 base64url"
    " characters (after an optional prefix), with ≥ 8 distinct characters (hex) or ≥ 10 and both"
    " letter cases (base64url), no 10-character substring repeated and no run of 8 consecutive"
    " characters ascending or descending"
)
_HEX_TAIL = re.compile(r"(?:[0-9a-f]+|[0-9A-F]+)\Z")
_B64_TAIL = re.compile(r"[A-Za-z0-9_-]+\Z")
_NAMESPACE = re.compile(r"ns_([A-Za-z0-9_-]{43})\Z")


def random_part(name: str) -> tuple[str, bool] | None:
    """The suffix credited as random and whether it is hex, or None if it is too short."""
    hex_tail = _HEX_TAIL.search(name)
    if hex_tail is not None and len(hex_tail.group()) >= HEX_MIN:
        return hex_tail.group(), True
    b64_tail = _B64_TAIL.search(name)
    if b64_tail is not None and len(b64_tail.group()) >= BASE64URL_MIN:
        return b64_tail.group(), False
    return None


@lru_cache(maxsize=4096)
def high_entropy(name: str) -> bool:
    """Whether `name` passes the anonymous-name rule above (`RULE`). Pure, and asked for the same
    resource on every call of a lease's life, so its last answers are kept."""
    if len(name) > MAX_LENGTH:
        return False
    found = random_part(name)
    if found is None:
        return False
    part, is_hex = found
    if len(set(part)) < (8 if is_hex else 10):
        return False
    if not is_hex and (part.lower() == part or part.upper() == part):
        return False
    return not _repeats(part) and not _sequence(part)


def _repeats(part: str) -> bool:
    seen: set[str] = set()
    for start in range(len(part) - REPEAT + 1):
        chunk = part[start : start + REPEAT]
        if chunk in seen:
            return True
        seen.add(chunk)
    return False


def _sequence(part: str) -> bool:
    run, step = 1, 0
    for before, after in itertools.pairwise(part):
        delta = ord(after) - ord(before)
        if delta in (-1, 1) and delta == step:
            run += 1
        else:
            run, step = (2, delta) if delta in (-1, 1) else (1, 0)
        if run >= SEQUENCE:
            return True
    return False


def minted_namespace(namespace: str) -> bool:
    """`ns_` + 43 base64url characters encoding exactly 256 bits (the last one's spare bits 0)."""
    match = _NAMESPACE.match(namespace)
    if match is None:
        return False
    encoded = match.group(1)
    raw = urlsafe_b64decode(encoded + "=")
    return urlsafe_b64encode(raw).rstrip(b"=").decode() == encoded
