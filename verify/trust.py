"""Trusted keys and the periods they were valid in, as a keyring states them (DESIGN §5).

A verifier trusts a key because its caller says so (``--trust``, ``--keys``), never because a
document lists it. A keyring (the JSON of ``GET /api/v1/keys``) also states each key's
``validFrom`` / ``validUntil``: a credential issued outside its key's period fails, so a retired
(perhaps leaked) key cannot vouch for anything dated after its retirement. Validity dates a
bundle carries are unsigned and never consulted for trust. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from verify.errors import MalformedInput

__all__ = ["Period", "issued_outside", "keyring_periods", "parse_time"]


@dataclass(frozen=True, slots=True)
class Period:
    """When a trusted key may sign: ``[valid_from, valid_until)``; None is unbounded."""

    valid_from: datetime | None = None
    valid_until: datetime | None = None


def parse_time(value: Any, what: str) -> datetime:
    """An ISO 8601 instant with a time zone; MalformedInput naming ``what`` otherwise."""
    try:
        instant = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise MalformedInput(f"{what} {str(value)[:40]!r} is not an ISO 8601 time with a zone")
    return instant.astimezone(UTC)


def keyring_periods(keys: list[dict[str, Any]]) -> dict[str, Period]:
    """``{did: Period}`` of a keyring's keys (``GET /api/v1/keys``); MalformedInput if bad."""
    periods: dict[str, Period] = {}
    for key in keys:
        did = key.get("did")
        if not isinstance(did, str):
            raise MalformedInput("every key in the keyring needs a did")
        start, end = key.get("validFrom"), key.get("validUntil")
        periods[did] = Period(
            None if start is None else parse_time(start, f"{did} validFrom"),
            None if end is None else parse_time(end, f"{did} validUntil"),
        )
    return periods


def issued_outside(trusted: Collection[str], did: str, issued: Any) -> str | None:
    """Why a credential dated ``issued`` by ``did`` falls outside the key's trusted period, or
    None. ``trusted`` may be a plain collection of dids (no periods known) or ``{did: Period}``."""
    period = trusted.get(did) if isinstance(trusted, Mapping) else None
    if not isinstance(period, Period):
        return None
    try:
        when = parse_time(issued, "validFrom")
    except MalformedInput as error:
        return str(error)
    if period.valid_from is not None and when < period.valid_from:
        return f"issued at {issued}, before {did} became valid"
    if period.valid_until is not None and when >= period.valid_until:
        until = period.valid_until.isoformat()
        return f"issued at {issued}, after {did} was retired (validUntil {until})"
    return None
