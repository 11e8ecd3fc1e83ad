"""The records of a ledger export (docs/export-format.md) and the entries they carry: v1, and
v2 for an operator's revoke (docs/decisions/0011).

``parse_lines`` turns JSON Lines into records; the ``*_of`` functions read one record each and
raise MalformedInput when it is not of its type's shape (the export cannot be replayed).
``event_of`` reads an entry's exact bytes: JSON, canonical RFC 8785 (DESIGN §4) and of the v1
(or v2 revoke) shape, or a flagged violation (the replay goes on). Pure: no I/O.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from sys import intern
from typing import Any

from verify.errors import MalformedInput
from verify.export_fast import entry_record, plain_object
from verify.ijson import loads
from verify.invariants import Event, Flag
from verify.jcs import MAX_SAFE_INTEGER
from verify.limits import check_bounds
from verify.multikey import DID_KEY_PREFIX, public_key_from_multibase

__all__ = [
    "EXPORT_TYPE",
    "EXPORT_VERSION",
    "Checkpoint",
    "Key",
    "checkpoint_of",
    "entry_of",
    "event_of",
    "header_of",
    "key_of",
    "parse_lines",
]

EXPORT_TYPE = "tenure-ledger-export"
EXPORT_VERSION = 1

# The v1 entry (ledger/lease/entries.py, docs/decisions/0001-ledger-entry-format.md).
_REQUIRED: dict[str, type] = {
    "v": int,
    "index": int,
    "time": str,
    "kind": str,
    "tenant": str,
    "resource": str,
    "holder": str,
    "fencingToken": int,
    "expiresAt": str,
    "absoluteExpiresAt": str,
    "capacity": int,
    "ownerTokenDigest": str,
    "leaseId": int,
}
_OPTIONAL: dict[str, type] = {
    "scope": str,
    "trigger": str,
    "resultDigest": str,
    "revokedBy": str,
    "reason": str,
}
_REVOKE_FIELDS = frozenset({"revokedBy", "reason"})
REASON_MAX_CHARS = 200
"""A revoke's reason: 1..200 printable characters, stored clear (docs/decisions/0011)."""
_NAMES = tuple(_REQUIRED)
_TYPES = tuple(_REQUIRED.values())
_KINDS = frozenset({"acquire", "renew", "release", "expire", "complete", "scope_release", "revoke"})
# One fixed-width time format, so ISO strings order exactly as the instants they name.
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[dict[str, Any]]:
    """JSON Lines (UTF-8) to records; MalformedInput naming a line that is no JSON object."""
    for number, line in enumerate(lines, 1):
        if (fast := entry_record(line)) is not None:  # the export's own entry line, read short
            yield fast
            continue
        if not line.strip():
            continue  # blank lines are allowed
        record = loads(line, f"line {number}")  # MalformedInput naming the line and the rule
        if type(record) is not dict:
            raise MalformedInput(f"line {number} is not one JSON object")
        check_bounds(record, f"line {number}", max_depth=2, max_nodes=64)  # records are flat
        yield record


# -- the records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Key:
    did: str
    public: bytes
    valid_from: str | None = None
    valid_until: str | None = None

    def covers(self, timestamp: str) -> bool:
        if self.valid_from is not None and timestamp < self.valid_from:
            return False
        return self.valid_until is None or timestamp < self.valid_until


@dataclass(frozen=True, slots=True)
class Checkpoint:
    size: int
    root: bytes
    timestamp: str
    note: str

    @property
    def last(self) -> int | None:
        return self.size - 1 if self.size else None


def header_of(record: dict[str, Any]) -> tuple[str, int]:
    """The header's (origin, treeSize)."""
    if record.get("type") != EXPORT_TYPE:
        raise MalformedInput(f"the first record must be of type {EXPORT_TYPE!r}")
    if record.get("version") != EXPORT_VERSION:
        raise MalformedInput(f"unsupported export version {record.get('version')!r}")
    return _field(record, "origin", str), _field(record, "treeSize", int)


def _field(record: dict[str, Any], name: str, kind: type) -> Any:
    value = record.get(name)
    if type(value) is not kind:
        raise MalformedInput(f"{record.get('type')} record: {name} must be a {kind.__name__}")
    return value


def _b64(value: str, what: str) -> bytes:
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"{what} is not base64") from e


def key_of(record: dict[str, Any]) -> Key:
    did = _field(record, "did", str)
    multikey = _field(record, "publicKeyMultibase", str)
    if did != DID_KEY_PREFIX + multikey:
        raise MalformedInput(f"key record: {did} is not the did:key of {multikey}")
    raw = public_key_from_multibase(multikey).public_bytes_raw()
    return Key(did, raw, _optional_time(record, "validFrom"), _optional_time(record, "validUntil"))


def _optional_time(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and (type(value) is not str or not _TIME.fullmatch(value)):
        raise MalformedInput(f"key record: {name} must be an ISO time or null")
    return value


def checkpoint_of(record: dict[str, Any]) -> Checkpoint:
    size = _field(record, "treeSize", int)
    root = _b64(_field(record, "rootHash", str), "checkpoint rootHash")
    timestamp = _field(record, "timestamp", str)
    if size < 0 or not _TIME.fullmatch(timestamp):
        raise MalformedInput("checkpoint record: bad treeSize or timestamp")
    return Checkpoint(size, root, timestamp, _field(record, "note", str))


def entry_of(record: dict[str, Any], position: int) -> tuple[int, bytes]:
    """An entry record's (index, leaf bytes); ``position`` names it in the error."""
    index = record.get("index")
    leaf = record.get("leaf")
    if type(index) is not int or type(leaf) is not str:
        raise MalformedInput(f"entry record {position}: needs int index and str leaf")
    try:
        return index, binascii.a2b_base64(leaf, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"entry {index}: leaf is not base64") from e


# -- one entry -----------------------------------------------------------------------------


def event_of(index: int, leaf: bytes, violation: Flag) -> Event | None:
    """The entry's fields, or None (and a violation) if its bytes are not a v1 entry. Bytes
    that decode plainly to a well-shaped entry whose canonical form they are skip the strict
    decoder, which would accept them; any other bytes get it, and its verdict."""
    entry = plain_object(leaf)
    if entry is None or _shape(entry) or entry["index"] != index or not _is_canonical(entry, leaf):
        entry = _strict_entry(index, leaf, violation)
        if entry is None:
            return None
    return Event(
        index,
        entry["kind"],
        entry["time"],
        (intern(entry["tenant"]), entry["resource"]),  # one copy of a tenant's name kept
        entry["holder"],
        entry["fencingToken"],
        entry["expiresAt"],
        entry["absoluteExpiresAt"],
        entry["capacity"],
        entry["ownerTokenDigest"],
        entry["leaseId"],
        entry.get("scope"),
    )


def _strict_entry(index: int, leaf: bytes, violation: Flag) -> dict[str, Any] | None:
    """The entry as the strict reader (RFC 7493) takes it, or None and the violation."""
    try:
        entry: dict[str, Any] = loads(leaf, "the entry")  # checked to be a dict just below
    except MalformedInput as e:
        violation(index, "entry-json", str(e))
        return None
    problem = _shape(entry) if type(entry) is dict else "not a JSON object"
    if problem is None and not _is_canonical(entry, leaf):
        problem = "not RFC 8785 canonical JSON (DESIGN §4)"
    if problem is None and entry["index"] != index:
        problem = f"index field says {entry['index']}"
    if problem is not None:
        violation(index, "entry-format", problem)
        return None
    return entry


def _shape(entry: dict[str, Any]) -> str | None:
    """Why ``entry`` is not a v1 entry (ledger/lease/entries.py), or None if it is one."""
    try:
        types = tuple(map(type, map(entry.__getitem__, _NAMES)))  # one C-level pass
    except KeyError as e:
        return f"{e.args[0]} is missing"
    if types != _TYPES:
        name = next(n for n, t, want in zip(_NAMES, types, _TYPES, strict=True) if t is not want)
        return f"{name} is not a {_REQUIRED[name].__name__}"
    if len(entry) != len(_NAMES) and (problem := _optional_shape(entry)):
        return problem
    if (entry["v"], entry["kind"] == "revoke") not in ((1, False), (2, True)) or (
        entry["kind"] not in _KINDS
    ):
        return f"unknown version {entry['v']} or kind {entry['kind']!r}"
    if entry["v"] == 2 and (problem := _revoke_shape(entry)):
        return problem
    if not (
        _TIME.fullmatch(entry["time"])
        and _TIME.fullmatch(entry["expiresAt"])
        and _TIME.fullmatch(entry["absoluteExpiresAt"])
    ):
        return "a time is not ISO 8601 UTC with milliseconds"
    ints = (entry["index"], entry["fencingToken"], entry["capacity"], entry["leaseId"])
    if min(ints) < 0 or max(ints) > MAX_SAFE_INTEGER or min(ints[1:3]) < 1:
        return "fencingToken and capacity must be >= 1, index and leaseId >= 0 (I-JSON)"
    if not _DIGEST.fullmatch(entry["ownerTokenDigest"]):
        return "ownerTokenDigest is not 64 lowercase hex digits"
    return None


def _optional_shape(entry: dict[str, Any]) -> str | None:
    for name in entry.keys() - _REQUIRED.keys():
        if name not in _OPTIONAL or (name in _REVOKE_FIELDS and entry["v"] != 2):
            return f"unknown field {name!r}"
        if type(entry[name]) is not _OPTIONAL[name]:
            return f"{name} is not a {_OPTIONAL[name].__name__}"
    return None


def _revoke_shape(entry: dict[str, Any]) -> str | None:
    """Why a v2 entry is not a revoke (0011): its operator pseudonym and reason."""
    by, reason = entry.get("revokedBy"), entry.get("reason")
    if type(by) is not str or not _DIGEST.fullmatch(by):
        return "revokedBy is not 64 lowercase hex digits"
    if type(reason) is not str or reason_problem(reason) is not None:
        return f"reason must be {REASON_RULE}"
    return None


REASON_RULE = f"1..{REASON_MAX_CHARS} printable characters (no control or format characters)"


def reason_problem(reason: str) -> str | None:
    """Why ``reason`` cannot be a revoke's reason, or None (the CLI and the audit agree)."""
    if not 1 <= len(reason) <= REASON_MAX_CHARS or not reason.isprintable():
        return f"reason must be {REASON_RULE}"
    return None


def _is_canonical(entry: dict[str, Any], leaf: bytes) -> bool:
    """RFC 8785 (DESIGN §4) for a v1-shaped entry. Its keys are ASCII and its values strings or
    safe integers, for which the C encoder's output is exactly JCS (see verify/jcs.py), so the
    general canonicalize() walk is not needed on this hot path."""
    try:
        return _ENCODER.encode(entry).encode() == leaf
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: not I-JSON
        return False
