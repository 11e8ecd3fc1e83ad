"""The scope routes of DESIGN §2.13: resume packet, scope release, dead-man heartbeat."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from api.names import RULE, high_entropy
from api.refusals import NAME_LENGTH, length_rule
from api.requests import caller_tenant, edge_of, parse, read_body
from api.responses import respond, suite_of
from api.schemas import HeartbeatBody, InputError, ScopeBody
from api.settings import Settings
from api.tenancy import ANONYMOUS
from verify.defaults import DEFAULT_TTL_SECONDS


def _scope_tenant(
    request: Request, scope: str, body: ScopeBody | None, cleanup: bool = False
) -> str:
    suite_of(request)  # refuse a bad Accept-Provenance before anything else
    namespace = body.namespace if body else None
    tenant = caller_tenant(request, namespace, body.tenant_id if body else None, cleanup)
    if len(scope) > NAME_LENGTH[1]:
        raise InputError("out_of_range", length_rule("scope", *NAME_LENGTH), "scope")
    if not scope.isprintable():
        message = "scope must contain only printable characters"
        raise InputError("invalid_value", message, "scope")
    if tenant == ANONYMOUS and not high_entropy(scope):
        message = f"in the anonymous tenant a scope {RULE}"
        raise InputError("low_entropy", message, "scope")
    return tenant


def _renew_seconds(body: HeartbeatBody, ttl_max: int) -> int | None:
    """How long a heartbeat renews the scope's leases for; None: it renews none."""
    if not body.renew:
        if body.ttl_seconds is not None:
            raise InputError("invalid_value", "ttlSeconds applies only with renew", "ttlSeconds")
        return None
    ttl = DEFAULT_TTL_SECONDS if body.ttl_seconds is None else body.ttl_seconds
    if ttl > ttl_max:
        raise InputError(
            "out_of_range", f"ttlSeconds must be an integer 1..{ttl_max}", "ttlSeconds"
        )
    return ttl


def scope_routes(app: FastAPI, settings: Settings) -> None:
    @app.get("/api/v1/scopes/{scope}")
    async def scope_packet(request: Request, scope: str) -> Response:
        """The resume packet: the caller's live leases in this scope."""
        tenant = _scope_tenant(request, scope, None)
        service = edge_of(request).service
        held = await service.scope_leases(tenant, scope)
        data = {"status": "pass", "scope": scope, "leases": held, "count": len(held)}
        return respond(request, data | {"ledger": service.position().as_data()}, 200)

    @app.post("/api/v1/scopes/{scope}/release")
    async def scope_release(request: Request, scope: str) -> Response:
        """Release every lease the caller holds in this scope."""
        body = parse(ScopeBody, await read_body(request, settings.body_max_bytes))
        tenant = _scope_tenant(request, scope, body, cleanup=True)
        service = edge_of(request).service
        released = await service.release_scope(tenant, scope)
        data = {"status": "pass", "outcome": "RELEASED", "scope": scope, "releasedIds": released}
        return respond(request, data | {"ledger": service.position().as_data()}, 200)

    @app.post("/api/v1/scopes/{scope}/heartbeat")
    async def scope_heartbeat(request: Request, scope: str) -> Response:
        """Heartbeat the scope's dead-man switch (`deadSeconds` arms it, 0 disarms it); with
        `renew`, also renew every live lease of the scope."""
        service = edge_of(request).service
        ttl_range = {"ttlSeconds": (1, service.limits.ttl_max_seconds)}
        body = parse(HeartbeatBody, await read_body(request, settings.body_max_bytes), ttl_range)
        if body.dead_seconds is None:
            raise InputError("missing", "deadSeconds is required", "deadSeconds")
        renew = _renew_seconds(body, service.limits.ttl_max_seconds)
        tenant = _scope_tenant(request, scope, body, cleanup=True)  # never miss a heartbeat
        beat = await service.heartbeat(tenant, scope, body.dead_seconds, renew)
        data = {"status": "pass", "scope": scope, **beat}
        if renew is not None:
            data["ledger"] = service.position().as_data()
        return respond(request, data, 200)
