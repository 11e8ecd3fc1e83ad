"""The MCP tools: descriptions that teach an agent the rules, and how each maps onto an
``AsyncClient`` call; their argument schemas are ``api/mcp_schema.py``.

Pure data; the server around it is ``api/mcp_server.py``.
"""

from __future__ import annotations

from typing import Any

from api.client import Answer, AsyncClient
from api.client.watching import events_call
from api.mcp_schema import RULES, ToolSpec
from verify.defaults import DEFAULT_TTL_SECONDS


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
