"""What an answer means: the error a refusal raises, and whether it answers the request at
all (an answer for another resource or operation is never believed)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.client.answers import Answer
from api.client.errors import (
    Conflict,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    MismatchedAnswer,
    RateLimited,
    Unavailable,
)

LOST_OUTCOMES = frozenset({"LOST", "NOT_ACTIVE"})


def raise_for(answer: Answer, status: int, headers: Mapping[str, str]) -> None:
    """Raise the error an answer means (docs/api.md, "Errors" and the refusals)."""
    data = answer.data
    if status >= 500 or data.get("status") == "unknown":
        raise Unavailable(_message(data, f"HTTP {status}: outcome unknown"), answer)
    if status == 429:
        retry_after = float(headers.get("retry-after") or 1)
        raise RateLimited(_message(data, "rate limited"), answer, retry_after)
    if status == 409:
        outcome = str(data.get("outcome"))
        reason = f"{outcome} on {data.get('resource')!r}"
        if outcome == "HELD":
            raise LeaseHeld(f"{reason}: held by {data.get('heldBy')}", answer)
        if outcome in LOST_OUTCOMES:
            raise LeaseLost(f"{reason}: the lease is no longer yours", answer)
        raise Conflict(f"{reason}: {data.get('witnesses')}", answer)
    if status >= 400:
        raise InvalidRequest(_message(data, f"HTTP {status}"), answer, status)


def same_request(expect: Iterable[tuple[str, str]], answer: Answer) -> None:
    """Raise MismatchedAnswer unless the answer repeats what was asked (op, resource)."""
    for name, asked in expect:
        said = answer.data.get(name)
        if said != asked:
            raise MismatchedAnswer(
                f"an answer for {name} {said!r} to a request for {asked!r}: not believed", answer
            )


def _message(data: Mapping[str, Any], default: str) -> str:
    error = data.get("error")
    if isinstance(error, Mapping) and "message" in error:
        return f"{error.get('code')}: {error['message']}"
    return default
