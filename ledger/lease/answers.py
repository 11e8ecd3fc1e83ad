"""The ``data`` object of a lease answer (DESIGN §3.3), built from a decision; pure.

Also the result redaction of rule 10, since what is stored and answered is the redacted result.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ledger.lease.leases import Decision, Lease, Outcome, Resource
from ledger.log.text import iso

ENGINE = "tenure/0.1.0"
PASS_OUTCOMES = frozenset(
    {Outcome.GRANTED, Outcome.RENEWED, Outcome.RELEASED, Outcome.COMPLETED, Outcome.FREE}
    | {Outcome.HOLDING}
)
GRANTING = frozenset({Outcome.GRANTED, Outcome.RENEWED})
SECRET_WORDS = (
    *("authorization", "password", "secret", "token", "privatekey", "apikey"),  # DESIGN rule 10
    *("passwd", "passphrase", "pwd", "credential", "accesskey", "secretkey", "signingkey"),
    *("cookie", "session", "bearer", "jwt", "otp", "pin", "cvv", "ssn"),
    *("connectionstring", "dsn", "clientkey", "auth"),
)
"""Rule 10's redaction list, widened past DESIGN's six words, in this one place (docs/api.md lists
it): a field whose name, lower-cased without `_`, `-`, `.` and spaces, contains one of these
words, or is one of the short ones exactly, has its value stored as "[redacted]"."""
_SHORT = frozenset({"otp", "pin", "cvv", "ssn", "dsn", "auth"})
_SECRET_NAME = re.compile("|".join(word for word in SECRET_WORDS if word not in _SHORT))
REDACTED = "[redacted]"


def looks_secret(name: str) -> bool:
    folded = re.sub(r"[-_. ]", "", name.lower())
    return folded in _SHORT or _SECRET_NAME.search(folded) is not None


def redact(value: Any) -> Any:
    """Rule 10: replace the values of secret-looking fields, at any depth."""
    if isinstance(value, dict):
        return {k: REDACTED if looks_secret(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


@dataclass(slots=True)
class Position:
    """Where the ledger stood for this answer (DESIGN §3.3 ``ledger``). Never changed once made
    (not frozen: it is built once per event, and a frozen dataclass is ~5× slower to build)."""

    tree_size: int
    root_hash: str
    log_index: int | None = None
    leaf_hash: str | None = None

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"treeSize": self.tree_size, "rootHash": self.root_hash}
        if self.log_index is not None:
            data["logIndex"] = self.log_index
            data["leafHash"] = self.leaf_hash
        return data


def lease_view(lease: Lease) -> dict[str, Any]:
    return {
        "holder": lease.holder,
        "fencingToken": lease.fencing_token,
        "expiresAt": iso(lease.expires_at),
    }


def status_of(outcome: Outcome) -> str:
    return "pass" if outcome in PASS_OUTCOMES else "fail"


def render(
    op: str,
    resource: Resource,
    decision: Decision,
    now: int,
    base: dict[str, Any],
    jitter: float = 0.0,
) -> dict[str, Any]:
    """The answer's data; ``base`` carries what every answer repeats (versions, limits)."""
    outcome = decision.outcome
    data: dict[str, Any] = {"status": status_of(outcome), "op": op, "outcome": outcome._value_}
    data["resource"] = resource.name
    data["granted"] = _granted(op, outcome, resource)
    lease = decision.lease
    if lease is not None:  # lease_view(lease), written out: once per answer
        data["holder"] = lease.holder
        data["fencingToken"] = lease.fencing_token
        data["expiresAt"] = iso(lease.expires_at)
        data["leaseId"] = lease.lease_id
        if lease.scope is not None:
            data["scope"] = lease.scope
    if resource.lifecycle_end is not None:
        data["absoluteExpiresAt"] = iso(resource.lifecycle_end)
    data["capacity"] = resource.capacity
    if resource.capacity > 1 or op == "get":
        data["holders"] = [lease_view(held) for held in resource.leases]
    if op == "get" and resource.capacity == 1 and resource.leases:
        data.update(lease_view(resource.leases[0]))
    if lease is not None and outcome in GRANTING:
        data["ttlSeconds"] = max(1, math.ceil((lease.expires_at - now) / 1000))
    if lease is None and resource.max_token > 0:
        data.setdefault("fencingToken", resource.max_token)  # the current one (refusals too)
    if resource.completion is not None and outcome in (Outcome.COMPLETED, Outcome.FREE):
        data["result"] = resource.completion.result
        data["completedAt"] = iso(resource.completion.completed_at)
    if outcome is Outcome.HELD:
        data.update(refusal(resource, now, decision.same_holder_label, jitter))
    data["witnesses"] = decision.witnesses
    data.update(base)
    return data


def _granted(op: str, outcome: Outcome, resource: Resource) -> bool:
    if op == "get":
        return bool(resource.leases)
    if op == "release":
        return outcome is Outcome.RELEASED
    return outcome in GRANTING


def refusal(resource: Resource, now: int, same_label: bool, jitter: float) -> dict[str, Any]:
    """Rule 8: who holds it, when a slot frees, and how long to wait."""
    soonest = min((lease.expires_at for lease in resource.leases), default=now)
    return {
        "heldBy": [lease.holder for lease in resource.leases],
        "sameHolderLabel": same_label,
        "expiresAt": iso(soonest),
        "retryAfterSeconds": max(1, math.ceil((soonest - now) / 1000)),
        "backoff": backoff(max(0, soonest - now), jitter),
    }


def backoff(retry_after_ms: int, jitter: float) -> dict[str, Any]:
    """A wait past the soonest expiry, spread by ``jitter`` in [0, 1) so retries do not stampede."""
    spread = min(2000, max(100, retry_after_ms // 4))
    return {"waitMs": retry_after_ms + int(jitter * spread), "strategy": "expiry-plus-jitter"}
