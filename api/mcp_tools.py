"""The MCP tools: their JSON Schemas (as strict as the HTTP API of docs/api.md), descriptions
that teach an agent the rules, and how each maps onto an ``AsyncClient`` call.

Pure data and one dispatch function; the server around it is ``api/mcp_server.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from api.client import Answer, AsyncClient
from api.client.watching import events_call
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


def _kw(args: dict[str, Any], *names: str) -> dict[str, Any]:
    """Optional tool arguments as client keyword arguments."""
    spelled = {"fencingToken": "fencing_token", "requestId": "request_id"}
    spelled["ownerToken"] = "owner_token"
    return {spelled.get(name, name): args[name] for name in names if name in args}


ACQUIRE_MORE = ("capacity", "fingerprint", "scope", "requestId", "ownerToken", "fencingToken")


async def _acquire(c: AsyncClient, a: dict[str, Any]) -> Answer:
    more = _kw(a, *ACQUIRE_MORE)
    wait = a.get("waitSeconds")
    return await c.acquire(
        a["resource"], a.get("holder"), a.get("ttlSeconds", DEFAULT_TTL_SECONDS), wait=wait, **more
    )


async def _wait(c: AsyncClient, a: dict[str, Any]) -> Answer:
    more = _kw(a, "capacity", "fingerprint", "scope", "requestId")
    ttl = a.get("ttlSeconds", DEFAULT_TTL_SECONDS)
    return await c.wait(a["resource"], a.get("holder"), a.get("waitSeconds", 30), ttl, **more)


async def _renew(c: AsyncClient, a: dict[str, Any]) -> Answer:
    more = _kw(a, "fencingToken", "requestId")
    return await c.renew(a["resource"], a["ownerToken"], a.get("ttlSeconds"), **more)


async def _release(c: AsyncClient, a: dict[str, Any]) -> Answer:
    return await c.release(a["resource"], a["ownerToken"], **_kw(a, "fencingToken", "requestId"))


async def _complete(c: AsyncClient, a: dict[str, Any]) -> Answer:
    more = _kw(a, "fencingToken", "requestId")
    return await c.complete(a["resource"], a["ownerToken"], a["result"], **more)


async def _watch_events(c: AsyncClient, a: dict[str, Any]) -> Answer:
    filters = _kw(a, "prefix", "scope", "holder")
    return await c.run(events_call(c.core, a.get("fromIndex"), a.get("limit", 20), **filters))


TOOLS = (
    ToolSpec(
        "lease_acquire",
        "Take a lease on a resource. Granted: data.fencingToken and data.ownerToken (shown "
        "once). Refused with data.outcome HELD (heldBy, retryAfterSeconds, backoff) or "
        "CONFLICT: not an error, act on it. " + RULES,
        ("resource",),
        ("holder", "ttlSeconds", "waitSeconds", *ACQUIRE_MORE),
        False,
        _acquire,
    ),
    ToolSpec(
        "lease_renew",
        "Extend a lease you hold by ttlSeconds from now; renew well before expiresAt (at a "
        "third of the ttl). Outcome LOST means it is gone: stop writing. " + RULES,
        ("resource", "ownerToken"),
        ("ttlSeconds", "fencingToken", "requestId"),
        False,
        _renew,
    ),
    ToolSpec(
        "lease_release",
        "Give a lease back as soon as the work is done. NOT_ACTIVE or LOST: it had already "
        "ended. " + RULES,
        ("resource", "ownerToken"),
        ("fencingToken", "requestId"),
        False,
        _release,
        destructive=True,
    ),
    ToolSpec(
        "lease_get",
        "Who holds a resource: FREE or HOLDING with holders (labels, fencing tokens, expiry). "
        "Read-only; it never grants anything.",
        ("resource",),
        (),
        True,
        lambda c, a: c.get(a["resource"]),
    ),
    ToolSpec(
        "lease_wait",
        "Queue for a lease for up to waitSeconds (first come first served); HELD when the "
        "time is up. " + RULES,
        ("resource",),
        ("holder", "waitSeconds", "ttlSeconds", "capacity", "fingerprint", "scope", "requestId"),
        False,
        _wait,
    ),
    ToolSpec(
        "lease_complete",
        "End a lease with the JSON result of the work; later acquirers with the same "
        "fingerprint get the result (outcome COMPLETED) instead of a lease. " + RULES,
        ("resource", "ownerToken", "result"),
        ("fencingToken", "requestId"),
        False,
        _complete,
        destructive=True,
    ),
    ToolSpec(
        "scope_get",
        "The resume packet: your live leases in a scope (after a restart, pick up from here).",
        ("scope",),
        (),
        True,
        lambda c, a: c.scope(a["scope"]),
    ),
    ToolSpec(
        "scope_release",
        "Release every lease you hold in a scope; answers releasedIds.",
        ("scope",),
        (),
        False,
        lambda c, a: c.release_scope(a["scope"]),
        destructive=True,
    ),
    ToolSpec(
        "scope_heartbeat",
        "Heartbeat a scope's dead-man switch: with no heartbeat for deadSeconds every lease "
        "in the scope is released. Call it more often than deadSeconds; 0 disarms. With "
        "renew, it also renews every live lease of the scope (answers renewed).",
        ("scope", "deadSeconds"),
        ("renew", "ttlSeconds"),
        False,
        lambda c, a: c.heartbeat(
            a["scope"], a["deadSeconds"], a.get("renew", False), a.get("ttlSeconds")
        ),
    ),
    ToolSpec(
        "namespace_create",
        "Mint a namespace (data.namespace, ns_…): a secret naming a fresh tenant where "
        "resource names like deploy:prod are yours alone. Keep it secret like a password.",
        (),
        (),
        False,
        lambda c, a: c.create_namespace(),
    ),
    ToolSpec(
        "verify_provenance",
        "Verify a saved answer, credential or receipt bundle against the server's keys: "
        "data.status pass or fail, with every check listed. Read-only.",
        ("document",),
        (),
        True,
        lambda c, a: c.verify_provenance(a["document"]),
    ),
    ToolSpec(
        "watch_events",
        "The latest lease events of your tenant (grant, renew, release, expire, revoke, "
        "complete) from fromIndex on, read from the ledger: each with its resource, fencing "
        "token, time and ledger position; call again from data.next for more. Read-only.",
        (),
        ("fromIndex", "limit", "prefix", "scope", "holder"),
        True,
        _watch_events,
    ),
    ToolSpec(
        "log_checkpoint",
        "The latest signed checkpoint of the append-only ledger (origin, treeSize, rootHash, "
        "C2SP signed note). Read-only.",
        (),
        (),
        True,
        lambda c, a: c.checkpoint(),
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
