"""``ledger.keys.keyed.KeyedSha256`` is HMAC-SHA-256: the same bytes as the standard library's."""

from __future__ import annotations

import hmac

from hypothesis import given
from hypothesis import strategies as st

from ledger.keys.keyed import KeyedSha256


@given(key=st.binary(max_size=200), messages=st.lists(st.binary(max_size=300), max_size=4))
def test_equals_hmac_digest(key: bytes, messages: list[bytes]) -> None:
    keyed = KeyedSha256(key)
    for message in messages:  # one key, several messages: its states are reused
        assert keyed.digest(message) == hmac.digest(key, message, "sha256")


def test_rfc_4231_case_2() -> None:
    """RFC 4231 §4.3: key "Jefe", "what do ya want for nothing?"."""
    mac = KeyedSha256(b"Jefe").digest(b"what do ya want for nothing?")
    assert mac.hex() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_long_keys_are_hashed_first() -> None:
    """RFC 4231 §4.7: a 131-byte key."""
    mac = KeyedSha256(b"\xaa" * 131).digest(
        b"Test Using Larger Than Block-Size Key - Hash Key First"
    )
    assert mac.hex() == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
