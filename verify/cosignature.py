"""C2SP tlog cosignatures, Ed25519 ``cosignature/v1`` (https://c2sp.org/tlog-cosignature).

A cosignature is a signed-note signature line a cosigner (a witness or monitor) adds to a
checkpoint it verified consistent with every earlier one it saw:

* key ID: SHA-256(name ‖ 0x0A ‖ 0x04 ‖ 32-byte Ed25519 public key)[:4] (type 0x04, not the
  log's 0x01, so a cosigner key is never mistaken for a log key);
* signature (``timestamped_signature``): big-endian u64 POSIX seconds ‖ 64-byte Ed25519 signature;
* signed message: ``cosignature/v1\\n`` ‖ ``time <decimal>\\n`` ‖ the checkpoint's whole note
  text (its final newline included, its signature lines not).

Signing lives here too (a monitor has only the base install); pure: key and time are passed in."""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.errors import MalformedInput, SignatureError
from verify.note import SIG_PREFIX, check_key_name, parse_note

__all__ = [
    "ALG_COSIGNATURE_V1",
    "cosign",
    "cosignature_key_id",
    "cosignature_vkey",
    "signed_message",
    "verify_cosignature",
]

ALG_COSIGNATURE_V1 = b"\x04"  # tlog-cosignature: the Ed25519 cosignature/v1 type byte
HEADER = "cosignature/v1\n"
MAX_TIMESTAMP = (1 << 63) - 1


def cosignature_key_id(name: str, public_key: bytes) -> bytes:
    """SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]."""
    check_key_name(name)
    if len(public_key) != 32:
        raise MalformedInput(f"Ed25519 public key has {len(public_key)} bytes, want 32")
    return hashlib.sha256(name.encode() + b"\n" + ALG_COSIGNATURE_V1 + public_key).digest()[:4]


def cosignature_vkey(name: str, public_key: bytes) -> str:
    """The cosigner's verifier key ``name+hex(key ID)+base64(0x04 ‖ public key)``."""
    encoded = base64.b64encode(ALG_COSIGNATURE_V1 + public_key).decode()
    return f"{name}+{cosignature_key_id(name, public_key).hex()}+{encoded}"


def signed_message(text: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs over the checkpoint note text ``text``."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise MalformedInput(f"cosignature timestamp {timestamp} is not 0..2^63-1")
    return f"{HEADER}time {timestamp}\n{text}".encode()


def cosign(note: str, name: str, private_key: Ed25519PrivateKey, timestamp: int) -> str:
    """Return ``note`` with a cosignature line by (name, key) at ``timestamp`` appended.

    The caller has verified the checkpoint (signature and consistency); this only signs.
    """
    text = parse_note(note).text
    public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = private_key.sign(signed_message(text, timestamp))
    blob = cosignature_key_id(name, public) + timestamp.to_bytes(8, "big") + signature
    return f"{note}{SIG_PREFIX}{name} {base64.b64encode(blob).decode()}\n"


def verify_cosignature(note: str, name: str, public_key: bytes) -> int:
    """Return the timestamp of the cosignature by (name, public_key) on ``note`` once it verifies.

    Lines by other keys (the log's own, other witnesses) are ignored. Raises MalformedInput or
    SignatureError (no such line, or a line that does not verify).
    """
    parsed = parse_note(note)
    kid = cosignature_key_id(name, public_key)
    mine = [s for s in parsed.signatures if (s.name, s.key_id) == (name, kid)]
    if not mine:
        raise SignatureError(f"note carries no cosignature by {name}+{kid.hex()}")
    verifier = Ed25519PublicKey.from_public_bytes(public_key)
    timestamps = []
    for sig in mine:
        if len(sig.signature) != 8 + 64:
            raise MalformedInput("a cosignature/v1 is an 8-byte timestamp and a 64-byte signature")
        timestamp = int.from_bytes(sig.signature[:8], "big")
        try:
            verifier.verify(sig.signature[8:], signed_message(parsed.text, timestamp))
        except InvalidSignature as e:
            raise SignatureError(f"invalid cosignature by {name}+{kid.hex()}") from e
        timestamps.append(timestamp)
    return max(timestamps)
