"""The shape of an offline receipt bundle (docs/bundle-format.md): the ``bundle:format`` check.

``parse_bundle`` turns a bundle's JSON into typed sections, raising MalformedBundle naming the
first field that is missing or of the wrong shape; hashes and roots are strict standard base64
(RFC 4648 §4). What the sections prove is checked by ``verify.bundle``. Pure: no I/O, no clock.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from verify.errors import MalformedInput

__all__ = [
    "BUNDLE_TYPE",
    "Bundle",
    "ConsistencyProof",
    "InclusionProof",
    "ListedKey",
    "MalformedBundle",
    "SignedCheckpointJSON",
    "is_bundle",
    "parse_bundle",
    "parse_instant",
]

BUNDLE_TYPE = "tenure-receipt-bundle/v1"
_TYPE_PREFIX = "tenure-receipt-bundle/"


class MalformedBundle(MalformedInput):
    """A bundle section is missing or has the wrong shape."""


@dataclass(frozen=True, slots=True)
class SignedCheckpointJSON:
    """A checkpoint section: what the JSON states, and the signed note that must agree."""

    origin: str
    tree_size: int
    root_hash: bytes
    note: str


@dataclass(frozen=True, slots=True)
class InclusionProof:
    index: int
    tree_size: int
    hashes: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class ConsistencyProof:
    first: int
    second: int
    hashes: tuple[bytes, ...]
    checkpoint: SignedCheckpointJSON


@dataclass(frozen=True, slots=True)
class ListedKey:
    did: str
    multibase: str
    valid_from: str | None
    valid_until: str | None


@dataclass(frozen=True, slots=True)
class Bundle:
    receipt: dict[str, Any]
    entry: bytes
    inclusion: InclusionProof
    checkpoint: SignedCheckpointJSON
    keys: tuple[ListedKey, ...]
    consistency: ConsistencyProof | None


def is_bundle(document: Any) -> bool:
    """A bundle of any version (a later version then fails ``bundle:format``, naming it)."""
    kind = document.get("type") if isinstance(document, dict) else None
    return isinstance(kind, str) and kind.startswith(_TYPE_PREFIX)


def parse_bundle(document: Any) -> Bundle:
    """The typed sections of a bundle; MalformedBundle naming the first bad field."""
    if not isinstance(document, dict):
        raise MalformedBundle("a bundle is a JSON object")
    if document.get("type") != BUNDLE_TYPE:
        raise MalformedBundle(f"type {document.get('type')!r} is not {BUNDLE_TYPE!r}")
    consistency = document.get("consistency")
    return Bundle(
        receipt=_receipt_of(_object(document, "receipt")),
        entry=_bytes(document, "entry"),
        inclusion=_inclusion_of(_object(document, "inclusion")),
        checkpoint=_checkpoint_of(_object(document, "checkpoint"), "checkpoint"),
        keys=_keys_of(document.get("keys")),
        consistency=None if consistency is None else _consistency_of(consistency),
    )


def _receipt_of(receipt: dict[str, Any]) -> dict[str, Any]:
    """A bundle's receipt must name the entry's position: ``ledger`` an object where stated."""
    data = receipt.get("data", receipt.get("credentialSubject"))
    if not isinstance(data, dict) or not isinstance(data.get("ledger"), dict):
        raise MalformedBundle("receipt.data.ledger must be an object naming the entry")
    return receipt


def _inclusion_of(section: dict[str, Any]) -> InclusionProof:
    return InclusionProof(
        _int(section, "index", "inclusion"),
        _int(section, "treeSize", "inclusion"),
        _hashes(section, "inclusion"),
    )


def _checkpoint_of(section: dict[str, Any], where: str) -> SignedCheckpointJSON:
    return SignedCheckpointJSON(
        _str(section, "origin", where),
        _int(section, "treeSize", where),
        _bytes(section, "rootHash", where),
        _str(section, "note", where),
    )


def _consistency_of(section: Any) -> ConsistencyProof:
    if not isinstance(section, dict):
        raise MalformedBundle("consistency must be an object")
    return ConsistencyProof(
        _int(section, "first", "consistency"),
        _int(section, "second", "consistency"),
        _hashes(section, "consistency"),
        _checkpoint_of(_object(section, "checkpoint", "consistency"), "consistency.checkpoint"),
    )


def _keys_of(value: Any) -> tuple[ListedKey, ...]:
    if not isinstance(value, list) or not all(isinstance(key, dict) for key in value):
        raise MalformedBundle("keys must be a list of objects")
    return tuple(
        ListedKey(
            _str(key, "did", "keys[]"),
            _str(key, "publicKeyMultibase", "keys[]"),
            _optional_str(key, "validFrom"),
            _optional_str(key, "validUntil"),
        )
        for key in value
    )


def _object(section: Mapping[str, Any], name: str, where: str = "bundle") -> dict[str, Any]:
    value = section.get(name)
    if not isinstance(value, dict):
        raise MalformedBundle(f"{where}.{name} must be an object")
    return value


def _int(section: Mapping[str, Any], name: str, where: str) -> int:
    value = section.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 2**53 - 1:
        raise MalformedBundle(f"{where}.{name} must be an integer in 0..2**53-1 (I-JSON)")
    return value


def _str(section: Mapping[str, Any], name: str, where: str) -> str:
    value = section.get(name)
    if not isinstance(value, str) or not _is_utf8(value):
        raise MalformedBundle(f"{where}.{name} must be a (UTF-8) string")
    return value


def _optional_str(section: Mapping[str, Any], name: str) -> str | None:
    return None if section.get(name) is None else _str(section, name, "keys[]")


def _is_utf8(value: str) -> bool:
    """JSON's \\ud800 escapes decode to lone surrogates, which no signed byte string holds."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _bytes(section: Mapping[str, Any], name: str, where: str = "bundle") -> bytes:
    return _decode(_str(section, name, where), f"{where}.{name}")


def _hashes(section: Mapping[str, Any], where: str) -> tuple[bytes, ...]:
    value = section.get("hashes")
    if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
        raise MalformedBundle(f"{where}.hashes must be a list of base64 strings")
    return tuple(_decode(h, f"{where}.hashes[{i}]") for i, h in enumerate(value))


def _decode(value: str, what: str) -> bytes:
    """Strict standard base64 (RFC 4648 §4), as the server writes it."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedBundle(f"{what} is not base64") from error


def parse_instant(value: Any, what: str) -> datetime:
    """An ISO 8601 time of a bundle field (a key's validity, a receipt's validFrom)."""
    try:
        instant = datetime.fromisoformat(str(value))
    except ValueError as error:
        raise MalformedBundle(f"{what} {value!r} is not an ISO 8601 time") from error
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)  # tenure writes UTC
