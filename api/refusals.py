"""Refusals in tenure's words: one message per rule, naming the field, whoever finds the fault
(pydantic while parsing, or a per-op rule later), so ``ttlSeconds: 0`` and ``ttlSeconds: 3601``
read the same."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.defaults import DEAD_CEILING_SECONDS, TTL_CEILING_SECONDS

MAX_SAFE_INTEGER = 2**53 - 1  # I-JSON (RFC 7493 §2.2): one integer rule for every field
Ranges = Mapping[str, tuple[int, int]]
"""A field's range where it is set at run time (``ttlSeconds``: 1..the operator's ``--ttl-max``)."""

_CAMEL = {
    "ttl_seconds": "ttlSeconds",
    "owner_token": "ownerToken",
    "fencing_token": "fencingToken",
    "wait_seconds": "waitSeconds",
    "request_id": "requestId",
    "tenant_id": "tenantId",
    "dead_seconds": "deadSeconds",
}
_TYPES = {"int_type": "an integer", "string_type": "a string", "bool_type": "a boolean"}
_RANGE_KINDS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}
_LENGTH_KINDS = {"string_too_short", "string_too_long"}
_RANGES: dict[str, tuple[int, int]] = {
    "ttlSeconds": (1, TTL_CEILING_SECONDS),
    "fencingToken": (1, MAX_SAFE_INTEGER),
    "capacity": (1, 1000),
    "waitSeconds": (1, 60),
    "deadSeconds": (0, DEAD_CEILING_SECONDS),
}
_LENGTHS: dict[str, tuple[int, int]] = {
    "resource": (1, 256),
    "key": (1, 256),
    "ownerToken": (1, 256),
    "fingerprint": (1, 256),
    "namespace": (1, 128),
}
NAME_LENGTH = (1, 128)
"""holder, requestId, scope, tenantId."""


class InputError(Exception):
    """A request the edge refuses before anything happens (422, or the status given)."""

    def __init__(self, code: str, message: str, field: str | None = None, status: int = 422):
        super().__init__(message)
        self.code, self.message, self.field, self.status = code, message, field, status

    def as_data(self) -> dict[str, Any]:
        """The ``error`` member of a refusal's ``data`` (DESIGN §3.3)."""
        error = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return error


def range_rule(field: str, low: int, high: int) -> str:
    """The one wording of an integer range rule."""
    return f"{field} must be an integer {low}..{high}"


def length_rule(field: str, low: int, high: int) -> str:
    """The one wording of a string length rule."""
    return f"{field} must be a string of {low}..{high} characters"


def not_json(detail: str) -> InputError:
    """The refusal of a body that does not parse as JSON."""
    return InputError("malformed_json", f"the body must be a JSON object (I-JSON): {detail}")


def refusal_of(problem: Mapping[str, Any], ranges: Ranges) -> InputError:
    """One pydantic error (``ValidationError.errors()[0]``) as tenure's refusal."""
    loc = [str(part) for part in problem["loc"]]
    kind = str(problem["type"])
    if kind == "json_invalid":
        return not_json(str((problem.get("ctx") or {}).get("error", problem["msg"])))
    if not loc:
        return InputError("wrong_type", "the body must be a JSON object")
    field = _CAMEL.get(loc[0], loc[0])
    if kind == "missing":
        return InputError("missing", f"{field} is required", field)
    if kind == "extra_forbidden":
        return InputError("unknown_field", f"unknown field {field!r}", field)
    if kind in _RANGE_KINDS:
        return _out_of_range(field, problem, ranges)
    if kind in _LENGTH_KINDS:
        low, high = _LENGTHS.get(field, NAME_LENGTH)
        return InputError("out_of_range", length_rule(field, low, high), field)
    if kind == "literal_error":
        allowed = (
            str((problem.get("ctx") or {}).get("expected", ""))
            .replace("'", "")
            .replace(" or ", ", ")
        )
        return InputError("invalid_value", f"{field} must be one of {allowed}", field)
    if kind.endswith("_type") or kind.endswith("_parsing"):
        expected = _TYPES.get(kind, "a JSON object" if kind == "model_type" else "another type")
        if field in _RANGES or kind in ("int_type", "int_from_float"):
            expected = "an integer"
        return InputError("wrong_type", f"{field} must be {expected}", field)
    message = str(problem["msg"]).removeprefix("Value error, ")
    return InputError("invalid_value", f"{field} {message}", field)


def _out_of_range(field: str, problem: Mapping[str, Any], ranges: Ranges) -> InputError:
    ctx = problem.get("ctx") or {}
    if ctx.get("le") == MAX_SAFE_INTEGER:
        message = f"{field} must be an I-JSON integer, at most 2**53 - 1 (RFC 7493 §2.2)"
        return InputError("out_of_range", message, field)
    low, high = ranges.get(field) or _RANGES.get(field) or (ctx.get("ge", 0), ctx.get("le", 0))
    return InputError("out_of_range", range_rule(field, low, high), field)
