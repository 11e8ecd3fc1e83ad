"""Request schemas of DESIGN §3.2, separate from the domain types, and their error rendering.

Inputs are strict (``"30"`` is not an integer) and closed (an unknown field is refused); both the
camelCase names and the snake_case spellings are accepted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ledger.ops import Op

OPS = tuple(Op)
OpName = Literal["acquire", "renew", "release", "get", "wait", "complete"]
"""The values of :class:`ledger.ops.Op`, spelled out for the schema (tests/test_ops.py checks)."""


def _alias(*names: str) -> Any:
    return Field(default=None, validation_alias=AliasChoices(*names))


def _printable(value: str | None) -> str | None:
    if value is not None and not value.isprintable():
        raise ValueError("must contain only printable characters")
    return value


Name128 = Annotated[str, Field(min_length=1, max_length=128)]
MAX_SAFE_INTEGER = 2**53 - 1  # I-JSON (RFC 7493 §2.2): one integer rule for every field
Count = Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]


class LeaseBody(BaseModel):
    """A lease operation; `op` may instead come from the path (`/api/v1/lease/{op}`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    op: OpName | None = None
    resource: Annotated[str, Field(min_length=1, max_length=256)]
    holder: Name128 | None = _alias("holder", "agent_id", "agentId", "actorDid", "actor_did")
    ttl_seconds: Count | None = _alias("ttlSeconds", "ttl_seconds")
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


class ScopeBody(BaseModel):
    """Body of the scope endpoints; every field is optional."""

    model_config = ConfigDict(extra="forbid", strict=True)

    dead_seconds: Annotated[int, Field(ge=0, le=86400)] | None = _alias(
        "deadSeconds", "dead_seconds"
    )
    tenant_id: Name128 | None = _alias("tenantId", "tenant_id")
    namespace: Annotated[str, Field(min_length=1, max_length=128)] | None = None

    _check_printable = field_validator("tenant_id", "namespace")(_printable)


class NamespaceBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


_CODES = {
    "missing": "missing",
    "extra_forbidden": "unknown_field",
    "literal_error": "invalid_value",
    "greater_than_equal": "out_of_range",
    "less_than_equal": "out_of_range",
    "string_too_short": "out_of_range",
    "string_too_long": "out_of_range",
    "value_error": "invalid_value",
    "json_invalid": "malformed_json",
    "model_type": "wrong_type",
}

_CAMEL = {
    "ttl_seconds": "ttlSeconds",
    "owner_token": "ownerToken",
    "fencing_token": "fencingToken",
    "wait_seconds": "waitSeconds",
    "request_id": "requestId",
    "tenant_id": "tenantId",
    "dead_seconds": "deadSeconds",
}


class InputError(Exception):
    """A request the edge refuses before anything happens (422, or the status given)."""

    def __init__(self, code: str, message: str, field: str | None = None, status: int = 422):
        super().__init__(message)
        self.code, self.message, self.field, self.status = code, message, field, status

    def as_data(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return error


def input_error(error: ValidationError) -> InputError:
    """The first problem pydantic found, as one clear error naming the field."""
    first = error.errors(include_url=False)[0]
    loc = [str(part) for part in first["loc"]]
    field = _CAMEL.get(loc[0], loc[0]) if loc else None
    kind = str(first["type"])
    code = _CODES.get(kind, "wrong_type" if kind.endswith("_type") else "invalid_value")
    if field is None:
        return InputError(code, str(first["msg"]))
    if kind == "extra_forbidden":
        return InputError(code, f"unknown field {field!r}", field)
    if kind == "less_than_equal" and (first.get("ctx") or {}).get("le") == MAX_SAFE_INTEGER:
        message = f"{field}: must be an I-JSON integer, at most 2**53 - 1 (RFC 7493 §2.2)"
        return InputError(code, message, field)
    return InputError(code, f"{field}: {first['msg']}", field)
