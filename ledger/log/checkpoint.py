"""Signing side of C2SP tlog-checkpoints and signed notes.

The body is https://c2sp.org/tlog-checkpoint (origin, decimal size, base64 root hash, optional
extension lines, each ending in a newline); the signature is an https://c2sp.org/signed-note
Ed25519 line. ``verify/note.py`` is the verifying half and shares its key-ID and name rules.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verify.errors import MalformedInput
from verify.note import SIG_PREFIX, check_key_name, key_id

__all__ = ["checkpoint_body", "sign_note"]


def checkpoint_body(origin: str, size: int, root: bytes, extra_lines: Sequence[str] = ()) -> str:
    """The checkpoint text for a tree of ``size`` with RFC 9162 ``root`` (32 bytes)."""
    lines = [origin, *extra_lines]
    if not origin or any("\n" in line or not line for line in lines):
        raise ValueError("checkpoint origin and extension lines must be non-empty single lines")
    if not 0 <= size < 1 << 64:
        raise ValueError(f"checkpoint size must be a uint64, got {size}")
    if len(root) != 32:
        raise ValueError(f"root hash must be 32 bytes, got {len(root)}")
    encoded = base64.b64encode(root).decode()
    return "".join(f"{line}\n" for line in [origin, str(size), encoded, *extra_lines])


def sign_note(body: str, name: str, private_key: Ed25519PrivateKey) -> str:
    """Append a signed-note Ed25519 signature by key ``name`` over the exact bytes of ``body``."""
    try:
        check_key_name(name)
    except MalformedInput as e:
        raise ValueError(str(e)) from e
    if not body.endswith("\n") or "\n\n" in body:
        raise ValueError("note text must end with a newline and contain no blank line")
    if any(ord(c) < 0x20 and c != "\n" for c in body):
        raise ValueError("note text must not contain control characters other than newline")
    public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = private_key.sign(body.encode())
    encoded = base64.b64encode(key_id(name, public) + signature).decode()
    return f"{body}\n{SIG_PREFIX}{name} {encoded}\n"
