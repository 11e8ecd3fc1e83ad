"""Request schemas of DESIGN §3.2, separate from the domain types, and their error rendering.

Inputs are strict (``"30"`` is not an integer) and closed (an unknown field is refused); both the
camelCase names and the snake_case spellings are accepted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from api.refusals import MAX_SAFE_INTEGER, InputError, Ranges, refusal_of
from ledger.lease.ops import Op
from verify.defaults import DEAD_CEILING_SECONDS, TTL_CEILING_SECONDS

OPS = tuple(Op)
OpName = Literal["acquire", "renew", "release", "get", "wait", "complete"]
"""The values of :class:`ledger.lease.ops.Op`, spelled out for the schema (tests/test_ops.py
checks)."""


def _alias(*names: str) -> Any:
    return Field(default=None, validation_alias=AliasChoices(*names))


def _printable(value: str | None) -> str | None:
    if value is not None and not value.isprintable():
        raise ValueError("must contain only printable characters")
    return value


Name128 = Annotated[str, Field(min_length=1, max_length=128)]
Count = Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]


class LeaseBody(BaseModel):
    """A lease operation; `op` may instead come from the path (`/api/v1/lease/{op}`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    op: OpName | None = None
    resource: Annotated[
        str, Field(min_length=1, max_length=256, validation_alias=AliasChoices("resource", "key"))
    ]
    holder: Name128 | None = _alias("holder", "agent_id", "agentId", "actorDid", "actor_did")
    ttl_seconds: Annotated[int, Field(ge=1, le=TTL_CEILING_SECONDS)] | None = _alias(
        "ttlSeconds", "ttl_seconds"
    )
    owner_token: Annotated[str, Field(min_length=1, max_length=256)] | None = _alias(
        "ownerToken", "owner_token"
    )
    fencing_token: Count | None = _alias("fencingToken", "fencing_token")
    capacity: Annotated[int, Field(ge=1, le=1000)] | None = None
    wait_seconds: Annotated[int, Field(ge=1, le=60)] | None = _alias("waitSeconds", "wait_seconds")
    request_id: Name128 | None = _alias("requestId", "request_id")
    fingerprint: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    scope: Name128 | None = None
    result: Any = None
    tenant_id: Name128 | None = _alias("tenantId", "tenant_id")
    namespace: Annotated[str, Field(min_length=1, max_length=128)] | None = None

    _check_printable = field_validator(
        "resource",
        "holder",
        "owner_token",
        "request_id",
        "fingerprint",
        "scope",
        "tenant_id",
        "namespace",
    )(_printable)

    @model_validator(mode="before")
    @classmethod
    def _one_name(cls, body: Any) -> Any:
        """``key`` (the seeds' spelling) names the resource too: one of them, never both."""
        if isinstance(body, dict) and "resource" in body and "key" in body:
            raise InputError("invalid_value", BOTH_NAMES, "key")
        return body


BOTH_NAMES = "resource and key name the same field (key is its alias): give one, not both"


class ScopeBody(BaseModel):
    """Body of the scope endpoints; every field is optional."""

    model_config = ConfigDict(extra="forbid", strict=True)

    dead_seconds: Annotated[int, Field(ge=0, le=DEAD_CEILING_SECONDS)] | None = _alias(
        "deadSeconds", "dead_seconds"
    )
    tenant_id: Name128 | None = _alias("tenantId", "tenant_id")
    namespace: Annotated[str, Field(min_length=1, max_length=128)] | None = None

    _check_printable = field_validator("tenant_id", "namespace")(_printable)


class HeartbeatBody(ScopeBody):
    """Body of the scope heartbeat: ``renew`` also renews every live lease of the scope, by
    ``ttlSeconds`` (default as a lease's)."""

    renew: bool = False
    ttl_seconds: Annotated[int, Field(ge=1, le=TTL_CEILING_SECONDS)] | None = _alias(
        "ttlSeconds", "ttl_seconds"
    )


class NamespaceBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def input_error(error: ValidationError, ranges: Ranges | None = None) -> InputError:
    """The first problem pydantic found, as one refusal in tenure's words naming the field
    (api/refusals.py); ``ranges`` overrides a field's range where the operator sets it."""
    return refusal_of(error.errors(include_url=False)[0], ranges or {})


__all__ = [
    "OPS",
    "HeartbeatBody",
    "InputError",
    "LeaseBody",
    "NamespaceBody",
    "OpName",
    "ScopeBody",
    "input_error",
]
