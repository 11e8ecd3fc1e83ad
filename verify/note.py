"""C2SP signed notes and tlog checkpoints, verification side.

* https://c2sp.org/signed-note — a UTF-8 text ending in a newline, a blank line, then one line
  per signature: ``— <key name> <base64(4-byte key ID ‖ signature)>`` (U+2014 em dash). An
  Ed25519 key's ID is the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key), and
  its verifier key string is ``<name>+<hex key ID>+<base64(0x01 ‖ public key)>``.
* https://c2sp.org/tlog-checkpoint — the signed text: origin line, decimal tree size, base64
  root hash, then optional non-empty extension lines.

Parsing follows golang.org/x/mod/sumdb/note ``Open``, and is stricter in one respect: base64 must
be canonical, so no two distinct notes carry the same signature bytes. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verify.errors import MalformedInput, SignatureError

__all__ = [
    "ALG_ED25519",
    "Checkpoint",
    "NoteSignature",
    "SignedNote",
    "key_id",
    "parse_checkpoint",
    "parse_note",
    "parse_vkey",
    "verify_note",
    "vkey",
]

ALG_ED25519 = b"\x01"  # signed-note signature type for Ed25519
SIG_PREFIX = "— "  # U+2014 EM DASH, then a space
MAX_SIGNATURES = 100  # as in sumdb/note: bound the work an oversized note can cause
_DECIMAL = re.compile(r"0|[1-9][0-9]*")  # tlog-checkpoint: no leading zeros
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")  # signed-note: no controls but newline


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: bytes  # 4 bytes
    signature: bytes  # the rest of the decoded base64


@dataclass(frozen=True)
class SignedNote:
    text: str  # the signed text, ending in a newline
    signatures: tuple[NoteSignature, ...]


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root_hash: bytes
    extra_lines: tuple[str, ...] = ()


def key_id(name: str, public_key: bytes) -> bytes:
    """First 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key) (signed-note, Ed25519)."""
    check_key_name(name)
    _check_public_key(public_key)
    return hashlib.sha256(name.encode() + b"\n" + ALG_ED25519 + public_key).digest()[:4]


def vkey(name: str, public_key: bytes) -> str:
    """The verifier key string ``name+hex(key ID)+base64(0x01 ‖ public key)``."""
    encoded = base64.b64encode(ALG_ED25519 + public_key).decode()
    return f"{name}+{key_id(name, public_key).hex()}+{encoded}"


def parse_vkey(text: str) -> tuple[str, bytes]:
    """Return (name, Ed25519 public key) of a verifier key string, checking its key ID."""
    name, sep, rest = text.partition("+")
    hex_id, sep2, encoded = rest.partition("+")
    if not (sep and sep2):
        raise MalformedInput("verifier key must be name+keyid+key")
    raw = _b64decode(encoded, "verifier key")
    if raw[:1] != ALG_ED25519:
        raise MalformedInput("verifier key is not an Ed25519 key (type 0x01)")
    public_key = raw[1:]
    if hex_id != key_id(name, public_key).hex():
        raise MalformedInput("verifier key ID does not match its name and key")
    return name, public_key


def parse_note(note: str | bytes) -> SignedNote:
    """Split a signed note into its text and signature lines; verify nothing."""
    note = _as_text(note)
    if _CONTROL.search(note):
        raise MalformedInput("note contains a control character other than newline")
    split = note.rfind("\n\n")
    if split < 0:
        raise MalformedInput("note has no blank line before its signatures")
    text, block = note[: split + 1], note[split + 2 :]
    if not block.endswith("\n"):
        raise MalformedInput("note has no signature lines, or they do not end in a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedInput(f"note has more than {MAX_SIGNATURES} signatures")
    return SignedNote(text, tuple(_parse_signature_line(line) for line in lines))


def verify_note(note: str | bytes, name: str, public_key: bytes) -> str:
    """Return the text of ``note`` once a signature by (name, public_key) verifies over it.

    Signatures by other keys (witness cosignatures, say) are ignored; every signature line that
    names this key must verify. Raises MalformedInput or SignatureError.
    """
    parsed = parse_note(note)
    kid = key_id(name, public_key)
    mine = [s for s in parsed.signatures if (s.name, s.key_id) == (name, kid)]
    if not mine:
        raise SignatureError(f"note carries no signature by key {name}+{kid.hex()}")
    verifier = Ed25519PublicKey.from_public_bytes(public_key)
    for sig in mine:
        try:
            verifier.verify(sig.signature, parsed.text.encode())
        except InvalidSignature as e:
            raise SignatureError(f"invalid note signature by key {name}+{kid.hex()}") from e
    return parsed.text


def parse_checkpoint(body: str) -> Checkpoint:
    """Parse a tlog-checkpoint note text (c2sp.org/tlog-checkpoint) with a SHA-256 root."""
    if not body.endswith("\n"):
        raise MalformedInput("checkpoint must end with a newline")
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        raise MalformedInput("checkpoint needs origin, size and root hash lines")
    origin, size, root, *extra = lines
    if not origin:
        raise MalformedInput("checkpoint origin line is empty")
    if not _DECIMAL.fullmatch(size) or int(size) >= 1 << 64:
        raise MalformedInput(f"checkpoint size {size!r} is not a decimal uint64 without leading 0")
    root_hash = _b64decode(root, "checkpoint root hash")
    if len(root_hash) != 32:
        raise MalformedInput(f"checkpoint root hash has {len(root_hash)} bytes, want 32")
    if any(not line for line in extra):
        raise MalformedInput("checkpoint extension lines must not be empty")
    return Checkpoint(origin, int(size), root_hash, tuple(extra))


def check_key_name(name: str) -> None:
    """A key name is non-empty, has no whitespace and no '+' (signed-note)."""
    if not name or "+" in name or any(c.isspace() for c in name):
        raise MalformedInput(f"invalid signed-note key name {name!r}")


def _parse_signature_line(line: str) -> NoteSignature:
    if not line.startswith(SIG_PREFIX):
        raise MalformedInput("signature line does not start with an em dash and a space")
    name, sep, encoded = line[len(SIG_PREFIX) :].partition(" ")
    if not sep:
        raise MalformedInput("signature line has no space between key name and signature")
    check_key_name(name)
    raw = _b64decode(encoded, "signature")
    if len(raw) < 5:
        raise MalformedInput("signature is shorter than a key ID plus one byte")
    return NoteSignature(name, raw[:4], raw[4:])


def _b64decode(value: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"{what} is not valid base64") from e
    # Reject the non-canonical spellings b64decode tolerates (stray bits before the padding).
    if not value or base64.b64encode(raw).decode() != value:
        raise MalformedInput(f"{what} is not canonical base64")
    return raw


def _as_text(note: str | bytes) -> str:
    """The note as a str that is exactly some UTF-8 byte string (no lone surrogates)."""
    try:
        raw = note.encode() if isinstance(note, str) else note
        return raw.decode()
    except UnicodeError as e:
        raise MalformedInput("note is not valid UTF-8") from e


def _check_public_key(public_key: bytes) -> None:
    if len(public_key) != 32:
        raise MalformedInput(f"Ed25519 public key has {len(public_key)} bytes, want 32")
