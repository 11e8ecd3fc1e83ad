"""Multibase base58btc, Ed25519 Multikey and the did:key method.

- base58btc: the Bitcoin alphabet, one leading ``1`` per leading zero byte
  (draft-msporny-base58-03); multibase prefix ``z``.
- Multikey (Controlled Identifiers v1.0 §2.2.2): ``publicKeyMultibase`` is
  ``z`` + base58btc(0xed 0x01 ‖ 32-byte Ed25519 public key), 0xed 0x01 being the
  unsigned-varint multicodec ``ed25519-pub``.
- did:key (W3C CCG did:key v0.9): ``did:key:<multikey>``, with one verification
  method ``did:key:<multikey>#<multikey>``.

Pure functions only: nothing here touches the network or the clock.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.errors import MalformedInput

BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_INDEX = {char: value for value, char in enumerate(BASE58_ALPHABET)}
# Encoding by lanes (this runs once per answer): the number is cut by two divisions
# into three lanes of 32 base58 digits, packed 512 bits apart in one integer; each round then
# splits every lane in two at once — q = floor(x / 58^h) by a multiply and a shift (the
# reciprocal m is exact for every x < 58^k: 58^k · (m · 58^h − 2^s) ≤ 2^s), and x − q · 58^h
# and q moved into the lane's upper half — until each digit sits alone in 16 bits. A 64-byte
# signature costs ~30% fewer instructions than ten digits per division round (~56k, not ~77k).
_LANE_DIGITS = 32
_LANES = 3
_LANE_BITS = 16 * _LANE_DIGITS  # 16 bits per digit: room for the products of every round
_LANED_MAX: int = 58 ** (_LANE_DIGITS * _LANES)
_LANE_UNIT: int = 58**_LANE_DIGITS
_TWO_LANES_UNIT: int = _LANE_UNIT * _LANE_UNIT
_TO_ALPHABET = bytes.maketrans(bytes(range(58)), BASE58_ALPHABET.encode("ascii"))


def _rounds() -> tuple[tuple[int, int, int, int, int], ...]:
    """Per round: the reciprocal m, the shift s, the mask of the quotients' bits, the divisor
    58^h and the half lane width, for lanes of k digits split into two of h = k / 2."""
    rounds, digits = [], _LANE_DIGITS
    while digits > 1:
        half, width = digits // 2, 16 * digits
        divisor, top = 58**half, 58**digits
        shift = (top * divisor - 1).bit_length()
        reciprocal = -(-(1 << shift) // divisor)
        assert top * (reciprocal * divisor - (1 << shift)) <= 1 << shift  # exact for x < top
        assert top * reciprocal < 1 << width  # a lane's product stays in its lane
        quotient_bits = (divisor - 1).bit_length()
        assert quotient_bits <= width - shift  # the next lane's low bits stay above the mask
        lanes = _LANES * _LANE_DIGITS // digits
        mask = sum(((1 << quotient_bits) - 1) << (width * lane) for lane in range(lanes))
        rounds.append((reciprocal, shift, mask, divisor, width // 2))
        digits = half
    return tuple(rounds)


_ROUNDS = _rounds()

MULTIBASE_BASE58BTC = "z"
ED25519_PUB_MULTICODEC = b"\xed\x01"
ED25519_KEY_SIZE = 32
DID_KEY_PREFIX = "did:key:"
_PAIRS = [high + low for high in BASE58_ALPHABET for low in BASE58_ALPHABET]
_PAIR = 58 * 58
_CHUNK = _PAIR**5


def b58encode(data: bytes) -> str:
    """Encode bytes as base58btc (no multibase prefix)."""
    number = int.from_bytes(data, "big")
    zeros = len(data) - len(data.lstrip(b"\x00"))
    if number >= _LANED_MAX:  # over 70 bytes: not a signature or a key
        return "1" * zeros + _b58_chunks(number)
    high, number = divmod(number, _TWO_LANES_UNIT)
    middle, low = divmod(number, _LANE_UNIT)
    lanes = high << 2 * _LANE_BITS | middle << _LANE_BITS | low
    for reciprocal, shift, mask, divisor, half in _ROUNDS:
        quotients = (lanes * reciprocal) >> shift & mask
        lanes += (quotients << half) - quotients * divisor
    digits = lanes.to_bytes(_LANES * _LANE_BITS // 8, "big")[1::2]  # each digit's low byte
    return "1" * zeros + digits.translate(_TO_ALPHABET).decode("ascii").lstrip("1")


def _b58_chunks(number: int) -> str:
    """base58 of a number, ten digits per division, two at a time from a 58² table."""
    pairs, chunks = _PAIRS, []
    while number:
        number, chunk = divmod(number, _CHUNK)
        chunk, d01 = divmod(chunk, _PAIR)
        chunk, d23 = divmod(chunk, _PAIR)
        chunk, d45 = divmod(chunk, _PAIR)
        d89, d67 = divmod(chunk, _PAIR)
        chunks.append(pairs[d89] + pairs[d67] + pairs[d45] + pairs[d23] + pairs[d01])
    return "".join(reversed(chunks)).lstrip("1")


def b58decode(text: str) -> bytes:
    """Decode base58btc (no multibase prefix); raise MalformedInput on a bad character."""
    number = 0
    for char in text:
        digit = _BASE58_INDEX.get(char)
        if digit is None:
            raise MalformedInput(f"not a base58btc character: {char!r}")
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    return b"\x00" * zeros + number.to_bytes((number.bit_length() + 7) // 8, "big")


def multibase_encode(data: bytes) -> str:
    """Multibase base58btc: ``z`` + base58btc(data)."""
    return MULTIBASE_BASE58BTC + b58encode(data)


def multibase_decode(text: str) -> bytes:
    """Decode a multibase base58btc string; any other multibase prefix is refused."""
    if not isinstance(text, str) or not text.startswith(MULTIBASE_BASE58BTC):
        raise MalformedInput("expected a multibase base58btc value starting with 'z'")
    return b58decode(text[1:])


def public_key_multibase(key: Ed25519PublicKey) -> str:
    """The Multikey ``publicKeyMultibase`` of an Ed25519 public key (``z6Mk…``)."""
    raw = key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return multibase_encode(ED25519_PUB_MULTICODEC + raw)


def public_key_from_multibase(value: str) -> Ed25519PublicKey:
    """Parse an Ed25519 Multikey ``publicKeyMultibase``."""
    decoded = multibase_decode(value)
    if not decoded.startswith(ED25519_PUB_MULTICODEC):
        raise MalformedInput("multikey is not an Ed25519 public key (multicodec 0xed01)")
    raw = decoded[len(ED25519_PUB_MULTICODEC) :]
    if len(raw) != ED25519_KEY_SIZE:
        raise MalformedInput(f"Ed25519 public key must be 32 bytes, got {len(raw)}")
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as e:
        raise MalformedInput(f"not an Ed25519 public key: {e}") from e


def did_key(key: Ed25519PublicKey) -> str:
    """The did:key DID of an Ed25519 public key."""
    return DID_KEY_PREFIX + public_key_multibase(key)


def verification_method_id(did: str) -> str:
    """The one verification method of a did:key DID: ``did:key:X#X``."""
    return f"{did}#{_multikey_of(did)}"


def public_key_from_did(did: str) -> Ed25519PublicKey:
    """The Ed25519 public key a did:key DID encodes."""
    return public_key_from_multibase(_multikey_of(did))


def resolve_did_key(verification_method: str) -> Ed25519PublicKey:
    """Resolve ``did:key:X#X`` to its key; refuse a fragment other than ``X``.

    did:key v0.9 §3.1.2: the verification method id is the DID plus ``#`` and the
    method-specific identifier, so any other fragment names no key in the document.
    """
    if not isinstance(verification_method, str):
        raise MalformedInput("verificationMethod must be a string")
    did, hash_sign, fragment = verification_method.partition("#")
    multikey = _multikey_of(did)
    if not hash_sign or fragment != multikey:
        raise MalformedInput(
            f"verificationMethod {verification_method!r} is not did:key:X#X for its key"
        )
    return public_key_from_multibase(multikey)


def did_key_document(did: str) -> dict[str, Any]:
    """A DID document for a did:key with one Multikey verification method (did:key v0.9 §3.1)."""
    public_key_from_did(did)  # validate before describing it
    method_id = verification_method_id(did)
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [
            {
                "id": method_id,
                "type": "Multikey",
                "controller": did,
                "publicKeyMultibase": _multikey_of(did),
            }
        ],
        "authentication": [method_id],
        "assertionMethod": [method_id],
        "capabilityDelegation": [method_id],
        "capabilityInvocation": [method_id],
    }


def _multikey_of(did: str) -> str:
    if not isinstance(did, str) or not did.startswith(DID_KEY_PREFIX + MULTIBASE_BASE58BTC):
        raise MalformedInput(f"not a did:key DID: {did!r}")
    multikey = did[len(DID_KEY_PREFIX) :]
    if not multikey.isalnum():  # no path, query, fragment or parameters in a did:key DID
        raise MalformedInput(f"not a did:key DID: {did!r}")
    return multikey
