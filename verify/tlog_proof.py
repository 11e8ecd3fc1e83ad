"""C2SP tlog-proof (https://c2sp.org/tlog-proof): an entry's inclusion proof with its checkpoint.

The text is ``c2sp.org/tlog-proof@v1``, an optional ``extra <base64>`` line, ``index <N>``, the
RFC 9162 audit path one base64 hash a line (leaf's sibling first), a blank line and the signed
checkpoint note verbatim, cosignatures included. tenure puts the entry's exact bytes in
``extra``, so the proof alone recomputes the leaf hash a receipt states (``data.ledger.leafHash``).
:func:`from_bundle` writes one from a receipt bundle (docs/bundle-format.md); :func:`verify`
checks one against the log's key and origin. Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verify.errors import MalformedInput
from verify.note import Checkpoint, parse_checkpoint, verify_note
from verify.rfc9162 import HASH_SIZE, leaf_hash, verify_inclusion

__all__ = ["HEADER", "TlogProof", "format_proof", "from_bundle", "parse", "verify"]

HEADER = "c2sp.org/tlog-proof@v1"
MAX_HASHES = 64
_INDEX = re.compile(r"index (0|[1-9][0-9]{0,19})")


@dataclass(frozen=True, slots=True)
class TlogProof:
    extra: bytes | None
    index: int
    hashes: tuple[bytes, ...]
    checkpoint: str
    """The signed checkpoint note, verbatim."""


def format_proof(index: int, hashes: Sequence[bytes], checkpoint: str, extra: bytes | None) -> str:
    """The tlog-proof text of entry ``index`` in the tree ``checkpoint`` (a signed note) signs."""
    lines = [HEADER]
    if extra is not None:
        lines.append(f"extra {_b64(extra)}")
    lines += [f"index {index}", *(_b64(h) for h in hashes)]
    return "\n".join(lines) + "\n\n" + checkpoint


def from_bundle(bundle: Mapping[str, Any]) -> str:
    """The tlog-proof of a receipt bundle's entry, proven into the bundle's checkpoint."""
    try:
        inclusion, checkpoint = bundle["inclusion"], bundle["checkpoint"]
        if type(inclusion["index"]) is not int or not isinstance(checkpoint["note"], str):
            raise MalformedInput("a bundle's inclusion.index is an integer, its note text")
        hashes = [_unb64(h, "inclusion hash") for h in inclusion["hashes"]]
        entry = _unb64(bundle["entry"], "entry")
        return format_proof(inclusion["index"], hashes, checkpoint["note"], entry)
    except (KeyError, TypeError) as error:
        raise MalformedInput(f"not a receipt bundle: {error}") from error


def parse(text: str) -> TlogProof:
    """The parts of a tlog-proof; MalformedInput naming what is wrong."""
    head, sep, checkpoint = text.partition("\n\n")
    lines = head.split("\n")
    if not sep or lines[0] != HEADER:
        raise MalformedInput(f"a tlog-proof starts with {HEADER!r} and has a blank line")
    extra = None
    if len(lines) > 1 and lines[1].startswith("extra "):
        extra = _unb64(lines.pop(1).removeprefix("extra "), "extra")
    found = _INDEX.fullmatch(lines[1]) if len(lines) > 1 else None
    if found is None:
        raise MalformedInput("a tlog-proof names its entry as 'index N', N decimal")
    hashes = tuple(_hash(line) for line in lines[2:])
    if len(hashes) > MAX_HASHES:
        raise MalformedInput(f"a tlog-proof has at most {MAX_HASHES} hashes")
    return TlogProof(extra, int(found.group(1)), hashes, checkpoint)


def verify(text: str, origin: str, public_key: bytes, entry: bytes | None = None) -> Checkpoint:
    """Check that ``entry`` (default: the proof's ``extra``) is in the tree the log's key signed
    under ``origin``; the checkpoint. Raises a VerificationError naming the failed check."""
    proof = parse(text)
    body = parse_checkpoint(verify_note(proof.checkpoint, origin, public_key))
    if body.origin != origin:
        raise MalformedInput(f"the checkpoint is of {body.origin!r}, not {origin!r}")
    record = proof.extra if entry is None else entry
    if record is None:
        raise MalformedInput("the tlog-proof carries no entry (extra) and none was given")
    verify_inclusion(proof.index, body.size, leaf_hash(record), proof.hashes, body.root_hash)
    return body


def _hash(line: str) -> bytes:
    value = _unb64(line, "inclusion hash")
    if len(value) != HASH_SIZE:
        raise MalformedInput(f"an inclusion hash has {len(value)} bytes, want {HASH_SIZE}")
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise MalformedInput(f"{what} must be base64 text")
    try:
        value = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedInput(f"{what} is not standard base64") from error
    if _b64(value) != text:
        raise MalformedInput(f"{what} is not canonical base64 (its unused bits are not zero)")
    return value
