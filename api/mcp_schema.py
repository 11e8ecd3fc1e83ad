"""What an MCP tool takes and answers: the JSON Schemas of its arguments (as strict as the
HTTP API of docs/api.md), the rules every lease tool's description teaches, and the
:class:`ToolSpec` a tool is declared with; the tools themselves are ``api/mcp_tools.py``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from api.client import Answer, AsyncClient
from api.openapi_ops import NAMESPACE_PATTERN
from api.schemas import BOTH_NAMES
from verify.defaults import DEAD_CEILING_SECONDS, DEFAULT_TTL_SECONDS, TTL_CEILING_SECONDS

RULES = (
    "Rules: pass fencingToken to every store you write to under this lease, so a write from a "
    "holder whose lease lapsed is refused; keep ownerToken secret (never log, print or share "
    "it); when refused with HELD, wait retryAfterSeconds (or backoff.waitMs) before trying "
    "again; a status of 'unknown' is never permission — the outcome is not known, retry with "
    "the same requestId or check with lease_get."
)


MAX_SAFE_INTEGER = 2**53 - 1  # I-JSON: the largest integer every JSON reader keeps exact


def _string(low: int, high: int, text: str) -> dict[str, Any]:
    return {"type": "string", "minLength": low, "maxLength": high, "description": text}


def _integer(low: int, high: int | None, text: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": low, "description": text}
    if high is not None:
        schema["maximum"] = high
    return schema


FIELDS: dict[str, dict[str, Any]] = {
    "resource": _string(1, 256, "the resource name, e.g. deploy:prod (or give it as key)"),
    "key": _string(1, 256, "the resource name under another spelling: give resource or key"),
    "holder": _string(
        1, 128, "your label, optional (a default is made); it never proves who holds a lease"
    ),
    "ttlSeconds": _integer(
        1,
        TTL_CEILING_SECONDS,
        f"lease duration in seconds (default {DEFAULT_TTL_SECONDS}; server cap 3600)",
    ),
    "ownerToken": _string(1, 256, "the secret from your grant; proves the lease is yours"),
    "fencingToken": _integer(
        1, MAX_SAFE_INTEGER, "your grant's fencing token; must match when given"
    ),
    "capacity": _integer(1, 1000, "how many holders the resource admits at once"),
    "waitSeconds": _integer(1, 60, "wait up to this long for the lease, first come first served"),
    "fingerprint": _string(1, 256, "identifies the work; a completed one answers its result"),
    "scope": _string(1, 128, "groups leases for lease resume (scope_get) and scope_release"),
    "requestId": _string(1, 128, "repeat it to retry safely after an unknown outcome"),
    "result": {"description": "JSON result of the finished work (≤ 32 KiB)"},
    "deadSeconds": _integer(
        0,
        DEAD_CEILING_SECONDS,
        "release the scope's leases after this long without a heartbeat (0 disarms)",
    ),
    "renew": {
        "type": "boolean",
        "description": "also renew every live lease of the scope by ttlSeconds (one call "
        "keeps them all)",
    },
    "namespace": {
        "type": "string",
        "pattern": NAMESPACE_PATTERN,
        "description": "your namespace (ns_…), for hosts that cannot send the Tenure-Namespace "
        "header; a secret like a password",
    },
    "fromIndex": _integer(0, MAX_SAFE_INTEGER, "the log index to read from (default: the head)"),
    "limit": _integer(1, 100, "at most this many events (default 20)"),
    "prefix": _string(1, 128, "only resources whose name starts with this"),
    "document": {
        "type": "object",
        "description": "a saved answer {data, _provenance}, a "
        "credential, or a bundle from /api/v1/log/bundle/{index}",
    },
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "data": {"type": "object", "description": "the server's answer (docs/api.md)"},
        "_provenance": {
            "type": ["object", "null"],
            "description": "the signed W3C credential over data (null for the checkpoint, "
            "whose signed note is its proof)",
        },
    },
    "required": ["data", "_provenance"],
    "additionalProperties": False,
}

Handler = Callable[[AsyncClient, dict[str, Any]], Awaitable[Answer | dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    read_only: bool
    call: Handler
    destructive: bool = field(default=False, kw_only=True)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The arguments; a tool that names a resource takes it as ``resource`` or ``key``
        (:func:`with_resource` checks one is given), and one that names a resource or a scope
        takes the tenant's ``namespace``."""
        names = [*self.required, *self.optional]
        required = [name for name in self.required if name != "resource"]
        if "resource" in names:
            names.append("key")
        if "resource" in names or "scope" in names:
            names.append("namespace")
        return {
            "type": "object",
            "properties": {name: FIELDS[name] for name in names},
            "required": required,
            "additionalProperties": False,
        }


def with_resource(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with ``key`` given as ``resource``; ValueError naming both fields when
    a tool that names a resource gets both or neither."""
    if "resource" not in spec.required:
        return arguments
    if "resource" in arguments and "key" in arguments:
        raise ValueError(BOTH_NAMES)
    if "key" in arguments:
        arguments = {("resource" if k == "key" else k): v for k, v in arguments.items()}
    if "resource" not in arguments:
        raise ValueError("resource (or key) is required")
    return arguments
