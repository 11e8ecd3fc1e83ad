"""A tenant's lease events, read from the ledger itself: the ledger is the event log.

Pure functions over entry bytes: which entries belong to one tenant and match a watch's
filters, the event each one becomes (its log index, leaf hash and exact entry bytes, so a
client proves it against a checkpoint), and the gaps a watch must say rather than skip.
Entries name tenants, holders and scopes by keyed pseudonyms (docs/decisions/0001); the filters
are turned into the same pseudonyms, and resource names come from a resolver the caller gives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ledger.lease.entries import Pseudonyms
from ledger.log.text import b64
from verify.rfc9162 import leaf_hash

OPS = {
    "acquire": "grant",
    "renew": "renew",
    "release": "release",
    "scope_release": "release",
    "expire": "expire",
    "revoke": "revoke",
    "complete": "complete",
}
"""An entry's ``kind`` → the event's ``op``."""


@dataclass(frozen=True, slots=True)
class Filters:
    """What a watch selects: all three optional, all that are given must match."""

    prefix: str | None = None
    scope: str | None = None
    holder: str | None = None


@dataclass(frozen=True, slots=True)
class Gap:
    """Entries ``[start, end)`` the watch does not deliver, and why (``reason`` is a code)."""

    start: int
    end: int
    reason: str
    message: str

    def as_data(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end, "reason": self.reason, "message": self.message}


class Selector:
    """One watch's test of an entry: the caller's tenant, then the filters."""

    def __init__(
        self, names: Pseudonyms, filters: Filters, name_of: Callable[[str, int], str | None]
    ) -> None:
        self._tenant = names.tenant
        self._prefix = filters.prefix
        self._scope = None if filters.scope is None else names.scope(filters.scope)
        self._holder = None if filters.holder is None else names.holder(filters.holder)
        self._name_of = name_of

    def event(self, index: int, entry: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The event of this entry and the entry's fields, or None if it is another tenant's
        or filtered out."""
        fields = json.loads(entry)
        if fields.get("tenant") != self._tenant or fields.get("kind") not in OPS:
            return None
        if self._scope is not None and fields.get("scope") != self._scope:
            return None
        if self._holder is not None and fields.get("holder") != self._holder:
            return None
        name = self._name_of(fields["resource"], index)
        if self._prefix is not None and (name is None or not name.startswith(self._prefix)):
            return None
        return event_data(index, entry, fields, name), fields


def event_data(
    index: int, entry: bytes, fields: dict[str, Any], name: str | None
) -> dict[str, Any]:
    """What a watcher is told of one entry: its position as a lease answer states its own
    (``ledger``), and the entry's exact bytes, whose RFC 9162 leaf hash (§2.1.1) it is."""
    data = {
        "op": OPS[fields["kind"]],
        "resource": name,
        "fencingToken": fields["fencingToken"],
        "time": fields["time"],
        "expiresAt": fields["expiresAt"],
        "leaseId": fields["leaseId"],
        "ledger": {"logIndex": index, "leafHash": b64(leaf_hash(entry))},
    }
    if "trigger" in fields:
        data["trigger"] = fields["trigger"]
    data["entry"] = entry.decode()
    return data


def start_of(wanted: int, size: int, replay_max: int) -> tuple[int, Gap | None]:
    """Where a watch asked to start at ``wanted`` begins reading, with a log of ``size``
    entries: at most ``replay_max`` entries back; an older start is a gap said first."""
    oldest = max(0, size - replay_max)
    if wanted >= oldest:
        return wanted, None
    message = (
        f"entries {wanted}..{oldest - 1} are older than the {replay_max} this server replays;"
        " read them from GET /api/v1/log/entries"
    )
    return oldest, Gap(wanted, oldest, "beyond_replay", message)


def in_order(start: int, read: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, bytes] | Gap]:
    """The entries read from ``start`` on, with a :class:`Gap` where an index is missing."""
    expected = start
    for index, entry in read:
        if index > expected:
            message = f"entries {expected}..{index - 1} could not be read from the ledger"
            yield Gap(expected, index, "missing", message)
        if index >= expected:
            yield index, entry
            expected = index + 1
