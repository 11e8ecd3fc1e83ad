"""Replay a whole ledger export (DESIGN §6): every root, every signature, the lease invariants.

The input is the parsed records of an export (docs/export-format.md): a header, the signing keys,
then the entries in index order with each checkpoint right after the entry that completes its
tree. One pass, O(log n) memory for the tree plus the live leases: the RFC 9162 §2.1.1 root of
``[0, size)`` is folded from a compact range (the perfect subtrees tiling the prefix), so each
checkpoint is checked the moment its last entry has been hashed.

Checks, each reported as a :class:`Violation` with the entry index it concerns:

* **ledger**: indices contiguous from 0; each entry's ``index`` equals its position; its bytes are
  JSON, canonical RFC 8785 (DESIGN §4) and of the v1 shape.
* **checkpoints**: the C2SP signed note verifies under a listed (or trusted) key named after the
  origin, its body parses, names the origin, and its root is the recomputed root. A checkpoint's
  violation carries the index of the last entry it covers.
* **invariants** per (tenant, resource), DESIGN §2: fencing tokens of grants strictly increase;
  no grant finds ``capacity`` leases live (a lease is live from its grant until the entry that
  ends it or its ``expiresAt``, whichever comes first); every later event names a granted,
  unended lease with its owner digest; renew, release, complete and scope release happen
  before the lease's expiry, an expire not before it; no ``expiresAt`` passes
  ``absoluteExpiresAt``, which is constant within a lifecycle; no grant follows a completion in
  the same lifecycle (§2 rule 10).

Warnings (not violations): entries no checkpoint covers, a fencing token that skips a value,
a checkpoint signed by a listed key outside that key's validity period.

Pure: the caller reads the file (``parse_lines`` turns its lines into records).
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from verify.errors import AuditFailed, MalformedInput, SignatureError
from verify.jcs import MAX_SAFE_INTEGER
from verify.multikey import DID_KEY_PREFIX, public_key_from_did, public_key_from_multibase
from verify.note import parse_checkpoint, verify_note
from verify.rfc9162 import EMPTY_ROOT, leaf_hash, node_hash

__all__ = [
    "EXPORT_TYPE",
    "EXPORT_VERSION",
    "AuditReport",
    "Violation",
    "audit",
    "check_audit",
    "parse_lines",
]

EXPORT_TYPE = "tenure-ledger-export"
EXPORT_VERSION = 1
PROGRESS_EVERY = 100_000

Progress = Callable[[int], None]

# The v1 entry (ledger/entries.py, docs/decisions/0001-ledger-entry.md).
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
_OPTIONAL: dict[str, type] = {"scope": str, "trigger": str, "resultDigest": str}
_NAMES = tuple(_REQUIRED)
_TYPES = tuple(_REQUIRED.values())
_KINDS = frozenset({"acquire", "renew", "release", "expire", "complete", "scope_release"})
# One fixed-width time format, so ISO strings order exactly as the instants they name.
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_DECODER = json.JSONDecoder()
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


@dataclass(frozen=True, slots=True)
class Violation:
    index: int | None
    """The entry concerned (for a checkpoint, the last entry it covers); None for the export."""
    check: str
    message: str

    def __str__(self) -> str:
        where = "export" if self.index is None else f"entry {self.index}"
        return f"{where}: {self.check}: {self.message}"

    def as_data(self) -> dict[str, Any]:
        return {"index": self.index, "check": self.check, "message": self.message}


@dataclass(slots=True)
class AuditReport:
    origin: str
    tree_size: int
    """The size the export's header announces."""
    trusted: bool
    """True when the caller pinned the keys; otherwise the export's own keys were used."""
    entries: int = 0
    checkpoints: int = 0
    checkpoints_verified: int = 0
    keys: int = 0
    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)
    signers: dict[int, str] = field(default_factory=dict)
    """The did:key whose signature verified each checkpoint, by tree size."""

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_data(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "origin": self.origin,
            "treeSize": self.tree_size,
            "trustedKeys": self.trusted,
            "entries": self.entries,
            "checkpoints": self.checkpoints,
            "checkpointsVerified": self.checkpoints_verified,
            "keys": self.keys,
            "signers": {str(size): did for size, did in self.signers.items()},
            "violations": [v.as_data() for v in self.violations],
            "warnings": [w.as_data() for w in self.warnings],
        }


def audit(
    records: Iterable[dict[str, Any]],
    trusted_keys: Collection[str] | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Replay an export; the report lists every violation. MalformedInput if it is no export.

    ``trusted_keys`` (did:key DIDs), when given, are the only keys a checkpoint may verify under;
    otherwise the export's own key records are used, which proves consistency, not origin.
    """
    stream = iter(records)
    header = next(stream, None)
    if header is None:
        raise MalformedInput("empty export: no header record")
    replay = _Replay(_header(header), trusted_keys, progress)
    for record in stream:
        replay.feed(record)
    return replay.finish()


def check_audit(
    records: Iterable[dict[str, Any]],
    trusted_keys: Collection[str] | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Like :func:`audit`, but raise AuditFailed (carrying the report) on any violation."""
    report = audit(records, trusted_keys, progress)
    if not report.ok:
        raise AuditFailed(report)
    return report


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[dict[str, Any]]:
    """JSON Lines (UTF-8) to records; MalformedInput naming a line that is no JSON object."""
    for number, line in enumerate(lines, 1):
        try:
            text = line if isinstance(line, str) else line.decode()
            record, end = _DECODER.raw_decode(text)
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError alike
            if not line.strip():
                continue  # blank lines are allowed
            raise MalformedInput(f"line {number} is not JSON: {e}") from e
        if type(record) is not dict or text[end:].strip():
            raise MalformedInput(f"line {number} is not one JSON object")
        yield record


# -- the records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Key:
    did: str
    public: bytes
    valid_from: str | None = None
    valid_until: str | None = None

    def covers(self, timestamp: str) -> bool:
        if self.valid_from is not None and timestamp < self.valid_from:
            return False
        return self.valid_until is None or timestamp < self.valid_until


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    size: int
    root: bytes
    timestamp: str
    note: str

    @property
    def last(self) -> int | None:
        return self.size - 1 if self.size else None


def _header(record: dict[str, Any]) -> tuple[str, int]:
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


def _key(record: dict[str, Any]) -> _Key:
    did = _field(record, "did", str)
    multikey = _field(record, "publicKeyMultibase", str)
    if did != DID_KEY_PREFIX + multikey:
        raise MalformedInput(f"key record: {did} is not the did:key of {multikey}")
    raw = public_key_from_multibase(multikey).public_bytes_raw()
    return _Key(did, raw, _optional_time(record, "validFrom"), _optional_time(record, "validUntil"))


def _optional_time(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and (type(value) is not str or not _TIME.fullmatch(value)):
        raise MalformedInput(f"key record: {name} must be an ISO time or null")
    return value


def _checkpoint(record: dict[str, Any]) -> _Checkpoint:
    size = _field(record, "treeSize", int)
    root = _b64(_field(record, "rootHash", str), "checkpoint rootHash")
    timestamp = _field(record, "timestamp", str)
    if size < 0 or not _TIME.fullmatch(timestamp):
        raise MalformedInput("checkpoint record: bad treeSize or timestamp")
    return _Checkpoint(size, root, timestamp, _field(record, "note", str))


# -- the replay ----------------------------------------------------------------------------


class _Frontier:
    """A compact range over ``[0, size)``: the perfect subtrees' roots, largest first (§2.1.1)."""

    __slots__ = ("_hashes", "size")

    def __init__(self) -> None:
        self.size = 0
        self._hashes: list[bytes] = []

    def append(self, leaf: bytes) -> None:
        h, idx, hashes = leaf, self.size, self._hashes
        while idx & 1:  # each trailing 1-bit is a subtree of the height just completed
            h = node_hash(hashes.pop(), h)
            idx >>= 1
        hashes.append(h)
        self.size += 1

    def root(self) -> bytes:
        if not self._hashes:
            return EMPTY_ROOT
        acc = self._hashes[-1]
        for h in reversed(self._hashes[:-1]):
            acc = node_hash(h, acc)
        return acc


class _Replay:
    def __init__(
        self, header: tuple[str, int], trusted: Collection[str] | None, progress: Progress | None
    ) -> None:
        self.origin, size = header
        self.report = AuditReport(self.origin, size, trusted is not None)
        self.trusted = None if trusted is None else dict(_trusted(did) for did in trusted)
        self.keys: list[_Key] = []
        self.tree = _Frontier()
        self.pending: list[_Checkpoint] = []  # read ahead of their last entry, by size
        self.sealed = 0  # size of the last checkpoint whose signature and root both hold
        self.next_index = 0
        self.rules = _Rules(self.report)
        self.progress = progress

    def feed(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "entry":
            self.entry(record)
        elif kind == "checkpoint":
            self.checkpoint(_checkpoint(record))
        elif kind == "key":
            if self.tree.size or self.report.checkpoints:
                raise MalformedInput("key records must come before entries and checkpoints")
            self.keys.append(_key(record))
            self.report.keys += 1
        else:
            raise MalformedInput(f"unknown record type {kind!r} in a version 1 export")

    def entry(self, record: dict[str, Any]) -> None:
        index = record.get("index")
        leaf = record.get("leaf")
        if type(index) is not int or type(leaf) is not str:
            raise MalformedInput(f"entry record {self.tree.size}: needs int index and str leaf")
        try:
            data = binascii.a2b_base64(leaf, strict_mode=True)
        except (binascii.Error, ValueError) as e:
            raise MalformedInput(f"entry {index}: leaf is not base64") from e
        if index != self.next_index:
            self.violation(index, "index-gap", f"expected entry {self.next_index}, got {index}")
        self.next_index = index + 1
        self.tree.append(leaf_hash(data))
        event = _event(index, data, self.report)
        if event is not None:
            self.rules.apply(event)
        self.report.entries = size = self.tree.size
        while self.pending and self.pending[0].size == size:
            self.seal(self.pending.pop(0))
        if self.progress is not None and size % PROGRESS_EVERY == 0:
            self.progress(size)

    def checkpoint(self, cp: _Checkpoint) -> None:
        self.report.checkpoints += 1
        if cp.size == self.tree.size:
            self.seal(cp)
        elif cp.size > self.tree.size:
            self.pending.append(cp)
            self.pending.sort(key=lambda p: p.size)
        else:
            message = f"checkpoint of size {cp.size} comes after entry {self.tree.size - 1}"
            self.violation(cp.last, "checkpoint-order", message + "; one pass cannot check it")

    def seal(self, cp: _Checkpoint) -> None:
        """Check one checkpoint against the tree of exactly its size (C2SP tlog-checkpoint)."""
        text = self.signed_text(cp)
        try:
            body = parse_checkpoint(text if text is not None else _unsigned_text(cp.note))
        except MalformedInput as e:
            self.violation(cp.last, "checkpoint-body", str(e))
            return
        if body.origin != self.origin:
            self.violation(cp.last, "checkpoint-origin", f"origin {body.origin!r}")
        if (body.size, body.root_hash) != (cp.size, cp.root):
            self.violation(cp.last, "checkpoint-record", "treeSize/rootHash differ from the note")
        computed = self.tree.root()
        if body.root_hash != computed:
            span = f"entries [{self.sealed}, {cp.size})"
            message = f"signed root {body.root_hash.hex()}, computed {computed.hex()} over {span}"
            self.violation(cp.last, "checkpoint-root", message)
        elif text is not None and body.origin == self.origin:
            self.report.checkpoints_verified += 1
            self.sealed = max(self.sealed, cp.size)

    def signed_text(self, cp: _Checkpoint) -> str | None:
        """The note's text if a key verifies it; trusted, then covering keys tried first."""
        trusted = self.trusted
        keys = sorted(
            self.candidates(),
            key=lambda k: (
                trusted is not None and k.did not in trusted,
                not k.covers(cp.timestamp),
            ),
        )
        for key in keys:
            try:
                text = verify_note(cp.note, self.origin, key.public)
            except (SignatureError, MalformedInput):
                continue
            self.report.signers[cp.size] = key.did
            if trusted is not None and key.did not in trusted:
                self.violation(cp.last, "untrusted-key", f"signed by {key.did}, not trusted")
                return None
            if not key.covers(cp.timestamp):
                message = f"signed at {cp.timestamp} by {key.did} outside its validity period"
                self.warning(cp.last, "key-validity", message)
            return text
        message = f"no key verifies the note of checkpoint {cp.size} as {self.origin!r}"
        self.violation(cp.last, "checkpoint-signature", message)
        return None

    def candidates(self) -> list[_Key]:
        if self.trusted is None:
            return self.keys
        listed = {key.did for key in self.keys}
        return self.keys + [
            _Key(did, raw) for did, raw in self.trusted.items() if did not in listed
        ]

    def finish(self) -> AuditReport:
        report = self.report
        for cp in self.pending:
            message = f"checkpoint of size {cp.size}, but the export has {self.tree.size} entries"
            self.violation(cp.last, "checkpoint-size", message)
        if report.tree_size != self.tree.size:
            message = f"header announces {report.tree_size} entries, found {self.tree.size}"
            self.violation(None, "export-size", message)
        if self.sealed < self.tree.size:
            message = f"entries [{self.sealed}, {self.tree.size}) are under no verified checkpoint"
            self.warning(self.sealed, "uncovered", message)
        return report

    def violation(self, index: int | None, check: str, message: str) -> None:
        self.report.violations.append(Violation(index, check, message))

    def warning(self, index: int | None, check: str, message: str) -> None:
        self.report.warnings.append(Violation(index, check, message))


def _trusted(did: str) -> tuple[str, bytes]:
    return did, public_key_from_did(did).public_bytes_raw()


def _unsigned_text(note: str) -> str:
    """The text part of a note no key verified, to still compare its root."""
    split = note.rfind("\n\n")
    return note[: split + 1] if split >= 0 else note


# -- one entry -----------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: a frozen __init__ costs ~1 µs per entry
class _Event:
    index: int
    kind: str
    time: str
    key: tuple[str, str]
    holder: str
    token: int
    expires: str
    absolute: str
    capacity: int
    owner: str
    lease_id: int
    scope: str | None


def _event(index: int, leaf: bytes, report: AuditReport) -> _Event | None:
    """The entry's fields, or None (and a violation) if its bytes are not a v1 entry."""
    try:
        entry = _DECODER.raw_decode(leaf.decode())[0]  # trailing bytes fail the JCS check
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError alike
        report.violations.append(Violation(index, "entry-json", f"not JSON: {e}"))
        return None
    problem = _shape(entry) if type(entry) is dict else "not a JSON object"
    if problem is None and not _is_canonical(entry, leaf):
        problem = "not RFC 8785 canonical JSON (DESIGN §4)"
    if problem is None and entry["index"] != index:
        problem = f"index field says {entry['index']}"
    if problem is not None:
        report.violations.append(Violation(index, "entry-format", problem))
        return None
    return _Event(
        index,
        entry["kind"],
        entry["time"],
        (entry["tenant"], entry["resource"]),
        entry["holder"],
        entry["fencingToken"],
        entry["expiresAt"],
        entry["absoluteExpiresAt"],
        entry["capacity"],
        entry["ownerTokenDigest"],
        entry["leaseId"],
        entry.get("scope"),
    )


def _shape(entry: dict[str, Any]) -> str | None:
    """Why ``entry`` is not a v1 entry (ledger/entries.py), or None if it is one."""
    try:
        types = tuple(map(type, map(entry.__getitem__, _NAMES)))  # one C-level pass
    except KeyError as e:
        return f"{e.args[0]} is missing"
    if types != _TYPES:
        name = next(n for n, t, want in zip(_NAMES, types, _TYPES, strict=True) if t is not want)
        return f"{name} is not a {_REQUIRED[name].__name__}"
    if len(entry) != len(_NAMES) and (problem := _optional_shape(entry)):
        return problem
    if entry["v"] != 1 or entry["kind"] not in _KINDS:
        return f"unknown version {entry['v']} or kind {entry['kind']!r}"
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
        if name not in _OPTIONAL:
            return f"unknown field {name!r}"
        if type(entry[name]) is not _OPTIONAL[name]:
            return f"{name} is not a {_OPTIONAL[name].__name__}"
    return None


def _is_canonical(entry: dict[str, Any], leaf: bytes) -> bool:
    """RFC 8785 (DESIGN §4) for a v1-shaped entry. Its keys are ASCII and its values strings or
    safe integers, for which the C encoder's output is exactly JCS (see verify/jcs.py), so the
    general canonicalize() walk is not needed on this hot path."""
    try:
        return _ENCODER.encode(entry).encode() == leaf
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: not I-JSON
        return False


# -- the lease invariants (DESIGN §2) ----------------------------------------------------------


@dataclass(slots=True)
class _Lease:
    """A granted lease as its acquire entry recorded it."""

    lease_id: int
    holder: str
    owner: str
    expires: str
    absolute: str
    capacity: int
    scope: str | None


@dataclass(slots=True)
class _Resource:
    max_token: int = 0
    capacity: int = 1
    lifecycle_end: str | None = None
    completed: bool = False
    leases: dict[int, _Lease] = field(default_factory=dict)
    """Granted leases no entry has ended yet, by fencing token (some may be past expiresAt)."""


class _Rules:
    def __init__(self, report: AuditReport) -> None:
        self.report = report
        self.resources: dict[tuple[str, str], _Resource] = {}

    def apply(self, ev: _Event) -> None:
        res = self.resources.get(ev.key)
        if res is None:
            res = self.resources[ev.key] = _Resource()
        if ev.expires > ev.absolute:  # rule 5 and the lifecycle of §1
            self.flag(ev, "lifecycle", f"expiresAt {ev.expires} > absoluteExpiresAt {ev.absolute}")
        if ev.kind == "acquire":
            self.acquire(res, ev)
        else:
            self.follow(res, ev)

    def acquire(self, res: _Resource, ev: _Event) -> None:
        if ev.lease_id != ev.index:
            self.flag(ev, "lease-id", f"a grant's leaseId is its own index, found {ev.lease_id}")
        if ev.token <= res.max_token:  # rule 2
            self.flag(ev, "fencing", f"fencing token {ev.token} <= {res.max_token} granted before")
        elif ev.token != res.max_token + 1:
            message = f"fencing token {ev.token} skips {res.max_token + 1}: a grant not recorded?"
            self.report.warnings.append(Violation(ev.index, "fencing-gap", message))
        res.max_token = max(res.max_token, ev.token)
        if ev.expires <= ev.time:
            self.flag(ev, "expiry", f"granted at {ev.time} a lease expiring at {ev.expires}")
        self.lifecycle(res, ev)
        self.capacity(res, ev)
        lease = _Lease(
            ev.index, ev.holder, ev.owner, ev.expires, ev.absolute, ev.capacity, ev.scope
        )
        res.leases[ev.token] = lease
        res.capacity = ev.capacity

    def lifecycle(self, res: _Resource, ev: _Event) -> None:
        """A grant inside the running lifecycle keeps its end; one after it starts a new one."""
        if res.lifecycle_end is None or ev.time >= res.lifecycle_end:
            res.lifecycle_end, res.completed = ev.absolute, False
            return
        if ev.absolute != res.lifecycle_end:
            message = f"absoluteExpiresAt {ev.absolute} in a lifecycle ending {res.lifecycle_end}"
            self.flag(ev, "lifecycle", message)
        if res.completed:  # rule 10: until the lifecycle ends, acquire answers COMPLETED
            self.flag(ev, "completed", "a grant after the lifecycle's work was completed")

    def capacity(self, res: _Resource, ev: _Event) -> None:
        """Rule 1: live means not ended by an entry and expiresAt still ahead (rule 7)."""
        live = sum(1 for lease in res.leases.values() if lease.expires > ev.time)
        if live and ev.capacity != res.capacity:
            message = f"capacity {ev.capacity} while {live} leases of capacity {res.capacity} live"
            self.flag(ev, "capacity", message)
        if live >= ev.capacity:
            self.flag(ev, "capacity", f"{live + 1} live leases exceed capacity {ev.capacity}")

    def follow(self, res: _Resource, ev: _Event) -> None:
        """renew, release, complete, scope_release, expire: events of one granted lease."""
        lease = res.leases.get(ev.token)
        if lease is None:
            what = "was never granted" if ev.token > res.max_token else "has already ended"
            self.flag(ev, "not-live", f"{ev.kind} of fencing token {ev.token}, which {what}")
            return
        self.same_lease(lease, ev)
        if ev.kind == "expire":
            if ev.time < lease.expires:  # rule 7: only the server's clock past expiresAt
                self.flag(ev, "early-expire", f"expired at {ev.time}, before {lease.expires}")
        elif ev.time >= lease.expires:  # rule 3: only a live lease renews, releases, completes
            self.flag(ev, "after-expiry", f"{ev.kind} at {ev.time}; lease expired {lease.expires}")
        if ev.kind == "renew":
            lease.expires = ev.expires
            return
        if ev.expires != lease.expires:
            self.flag(ev, "lease-mismatch", f"expiresAt {ev.expires}, lease had {lease.expires}")
        del res.leases[ev.token]
        if ev.kind == "complete":
            res.completed = True

    def same_lease(self, lease: _Lease, ev: _Event) -> None:
        if ev.owner != lease.owner:  # rule 3: the digest granted, and no other
            message = f"ownerTokenDigest {ev.owner[:16]}…, granted {lease.owner[:16]}…"
            self.flag(ev, "owner", message)
        if ev.absolute != lease.absolute:
            message = f"absoluteExpiresAt {ev.absolute}, granted with {lease.absolute}"
            self.flag(ev, "lifecycle", message)
        if ev.capacity != lease.capacity:
            self.flag(ev, "capacity", f"capacity {ev.capacity}, granted with {lease.capacity}")
        granted = (lease.lease_id, lease.holder, lease.scope)
        if (ev.lease_id, ev.holder, ev.scope) != granted:
            self.flag(ev, "lease-mismatch", "leaseId, holder or scope differ from the grant's")

    def flag(self, ev: _Event, check: str, message: str) -> None:
        self.report.violations.append(Violation(ev.index, check, message))
