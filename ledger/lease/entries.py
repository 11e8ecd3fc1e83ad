"""Ledger entries: the exact bytes appended for each event (DESIGN §4).

An entry is the RFC 8785 (JCS) canonical JSON of a flat object whose names (tenant, resource,
holder, scope) are keyed pseudonyms: HMAC-SHA256 under a per-tenant key derived from the server's
pseudonym secret. The ledger can be published without revealing names or secrets, an auditor can
still follow one resource through it, and a tenant that hands its key to an auditor lets it map
pseudonyms back to names. The format is versioned by ``v``; see
docs/decisions/0001-ledger-entry-format.md.
"""

from __future__ import annotations

import hmac
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger.keys.keyed import KeyedSha256
from ledger.lease.leases import Event
from ledger.log.text import iso
from verify.jcs import MAX_SAFE_INTEGER, canonicalize

try:  # built from native/ where a C compiler was (pyproject.toml: optional)
    from ledger._native import entry_bytes

    HAVE_NATIVE = True
except ImportError:  # pragma: no cover - the pure-Python install
    HAVE_NATIVE = False

ENTRY_VERSION = 1
REVOKE_VERSION = 2
"""A revoke entry carries fields v1 lacks (``revokedBy``, ``reason``): 0001 and 0011."""
_REMEMBERED = 512  # pseudonyms kept per tenant before the memo starts over: bounded memory


def entry_time(entry: bytes) -> int:
    """The ``time`` of an entry's bytes, in ms since the epoch (the inverse of :func:`iso`)."""
    text = json.loads(entry)["time"]
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Pseudonyms:
    """Keyed pseudonyms for one tenant (DESIGN §4), remembered: every event of a resource
    needs the same ones again."""

    tenant: str
    key: bytes
    _known: dict[tuple[bytes, str], str] = field(default_factory=dict, compare=False, repr=False)
    _mac: KeyedSha256 = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_mac", KeyedSha256(self.key))  # the tenant's key, once

    @classmethod
    def derive(cls, master: bytes, tenant: str) -> Pseudonyms:
        name = _mac(master, b"tenure/tenant\x00", tenant)
        return cls(
            tenant=name,
            key=hmac.digest(master, b"tenure/tenant-key\x00" + tenant.encode(), "sha256"),
        )

    def resource(self, name: str) -> str:
        # a remembered name is found here, without a second call (six look-ups per event)
        known = self._known.get((_RESOURCE, name))
        return self._of(_RESOURCE, name) if known is None else known

    def holder(self, name: str) -> str:
        known = self._known.get((_HOLDER, name))
        return self._of(_HOLDER, name) if known is None else known

    def scope(self, name: str) -> str:
        return self._of(b"scope\x00", name)

    def operator(self, name: str) -> str:
        """The pseudonym of the operator label a revoke names (0011)."""
        return self._of(b"operator\x00", name)

    def _of(self, label: bytes, name: str) -> str:
        known = self._known.get((label, name))
        if known is None:
            if len(self._known) >= _REMEMBERED:
                self._known.clear()
            known = self._known[(label, name)] = self._mac.digest(label + name.encode()).hex()
        return known


_RESOURCE = b"resource\x00"
_HOLDER = b"holder\x00"


def _mac(key: bytes, label: bytes, value: str) -> str:
    return hmac.digest(key, label + value.encode(), "sha256").hex()


PSEUDONYM_FIELDS = ("tenant", "resource", "holder")
"""The entry's names a credential's manifest repeats (the entry binds them)."""


def pseudonyms_of(entry: dict[str, Any]) -> dict[str, str]:
    """The pseudonyms an entry names, for the credential over an answer that cites it."""
    return {name: entry[name] for name in PSEUDONYM_FIELDS if name in entry}


def encode_entry(
    index: int,
    event: Event,
    names: Pseudonyms,
    resource: str,
    result_digest: str | None = None,
) -> bytes:
    """The canonical bytes of one entry; these exact bytes are stored, hashed and proven.

    Written straight into RFC 8785 form (keys sorted, no escapes needed) when every value is
    ASCII without anything to escape and every integer is safe — every entry but a revoke's,
    whose reason is free text: the writer makes one per event while it holds the ledger's lock
    (docs/decisions/0012). ``tests/test_entry_bytes.py`` proves the bytes equal
    :func:`canonicalize` of :func:`entry_fields`, which every other entry takes.
    """
    lease = event.lease
    ints = (index, lease.fencing_token, event.capacity, lease.lease_id)
    trigger = event.trigger
    if (
        event.revocation is not None
        or (trigger is not None and _PLAIN.fullmatch(trigger) is None)
        or not -MAX_SAFE_INTEGER <= min(ints) <= max(ints) <= MAX_SAFE_INTEGER
    ):
        return canonicalize(entry_fields(index, event, names, resource, result_digest))
    scope = "" if lease.scope is None else f',"scope":"{names.scope(lease.scope)}"'
    result = "" if result_digest is None else f',"resultDigest":"{result_digest}"'
    return (
        f'{{"absoluteExpiresAt":"{iso(event.lifecycle_end)}","capacity":{event.capacity},'
        f'"expiresAt":"{iso(event.expires_at)}","fencingToken":{lease.fencing_token},'
        f'"holder":"{names.holder(lease.holder)}","index":{index},"kind":"{event.kind._value_}",'
        f'"leaseId":{lease.lease_id},"ownerTokenDigest":"{lease.owner_digest.hex()}",'
        f'"resource":"{names.resource(resource)}"{result}{scope},"tenant":"{names.tenant}",'
        f'"time":"{iso(event.time)}"'
        + ("" if trigger is None else f',"trigger":"{trigger}"')
        + f',"v":{ENTRY_VERSION}}}'
    ).encode()


def encode_entry_native(
    index: int,
    event: Event,
    names: Pseudonyms,
    resource: str,
    result_digest: str | None = None,
) -> bytes:
    """:func:`encode_entry`'s bytes, written by native code (``native/record.c``) where it is
    built and the entry plain (no revoke, a trigger of the service's words, safe integers, times
    from 1970 to 9999); by :func:`encode_entry` otherwise. ``tests/test_native_record.py`` holds
    the two to the same bytes."""
    lease = event.lease
    if HAVE_NATIVE and event.revocation is None:
        made = entry_bytes(
            index,
            event.kind._value_,
            event.capacity,
            lease.fencing_token,
            lease.lease_id,
            event.time,
            event.expires_at,
            event.lifecycle_end,
            names.tenant,
            names.resource(resource),
            names.holder(lease.holder),
            lease.owner_digest,
            None if lease.scope is None else names.scope(lease.scope),
            event.trigger,
            result_digest,
        )
        if made is not None:
            return made
    return encode_entry(index, event, names, resource, result_digest)


_PLAIN = re.compile(r"[A-Za-z0-9_.:-]*")
"""Text that RFC 8785 writes as it is (a trigger is one of the service's own words)."""


def entry_fields(
    index: int,
    event: Event,
    names: Pseudonyms,
    resource: str,
    result_digest: str | None = None,
) -> dict[str, Any]:
    """The entry as a JSON object (DESIGN §4, docs/decisions/0001)."""
    lease = event.lease
    entry: dict[str, Any] = {
        "v": ENTRY_VERSION,
        "index": index,
        "time": iso(event.time),
        "kind": event.kind.value,
        "tenant": names.tenant,
        "resource": names.resource(resource),
        "holder": names.holder(lease.holder),
        "fencingToken": lease.fencing_token,
        "expiresAt": iso(event.expires_at),
        "absoluteExpiresAt": iso(event.lifecycle_end),
        "capacity": event.capacity,
        "ownerTokenDigest": lease.owner_digest.hex(),
        "leaseId": lease.lease_id,
    }
    if lease.scope is not None:
        entry["scope"] = names.scope(lease.scope)
    if event.trigger is not None:
        entry["trigger"] = event.trigger
    if result_digest is not None:
        entry["resultDigest"] = result_digest
    if event.revocation is not None:
        entry["v"] = REVOKE_VERSION
        entry["revokedBy"] = names.operator(event.revocation.by)
        entry["reason"] = event.revocation.reason
    return entry
