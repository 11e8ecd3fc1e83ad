"""The OpenAPI 3.1 document as the server really answers (DESIGN §3).

FastAPI describes the routes' paths and parameters; this module adds what it cannot see because
every route writes its own ``Response``: the ``{data, _provenance}`` envelope of each status, the
security schemes (API key, namespace header, or neither), the ``Accept-Provenance`` and
``Retry-After`` headers, the request bodies, and ``op`` as an enum. Schemathesis checks the result
against a live server (tests/test_openapi.py).
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from api.list_routes import FILTER_LENGTHS, LEASES_PATH
from api.openapi_ops import NAMESPACE_HEADER
from api.openapi_schemas import (
    ACCEPT_PROVENANCE,
    COMPONENTS,
    LOG_ANSWERS,
    body_schemas,
)
from api.schemas import OPS
from api.settings import Settings
from api.watch_routes import WATCH_EVENTS_PATH
from verify.defaults import LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX

JSON = "application/json"
TENANT_SECURITY: list[dict[str, list[str]]] = [{}, {"apiKey": []}]
"""Anonymous (nothing) or an API key; a namespace is the ``Tenure-Namespace`` header parameter
(or body ``namespace``), whose exact format a security scheme could not state (DESIGN §3.1)."""

LEASE_STATUSES = ("200", "201", "401", "409", "413", "415", "422", "429", "500", "503")
SCOPE_STATUSES = ("200", "401", "413", "415", "422", "429", "500", "503")
_DESCRIPTIONS = {
    "200": "Done, or a replay of a repeated requestId",
    "201": "A fresh grant (acquire, wait); `data.ownerToken` is shown only here",
    "400": "A query or path parameter refused, naming it",
    "401": "An unknown API key, or a server that requires one",
    "403": "The anonymous tenant cannot watch: its events are every anonymous caller's",
    "409": "Refused by a lease rule: HELD, LOST, CONFLICT, IDEMPOTENCY_CONFLICT, NOT_ACTIVE",
    "413": "The body is over the size limit",
    "415": "The body is not sent as JSON (Content-Type)",
    "422": "Bad input, naming the field and the rule; nothing is recorded",
    "429": "Rate-limited; retry after `Retry-After` seconds",
    "500": "Internal error: the outcome is unknown (`status: unknown`), never a success",
    "503": "Storage unavailable: the outcome is unknown (`status: unknown`)",
}
_RETRY_AFTER = {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}}


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Serve :func:`document` at ``/openapi.json`` instead of FastAPI's own guess."""
    cached: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not cached:
            cached.update(document(app, settings))
        return cached

    app.openapi = openapi  # type: ignore[method-assign]


def document(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The whole document: FastAPI's paths, made truthful."""
    doc = get_openapi(
        title=app.title,
        version=app.version,
        openapi_version="3.1.0",
        description="tenure: leases with proofs. Every lease, namespace and scope answer is "
        "`{data, _provenance}`; see docs/api.md.",
        routes=app.routes,
    )
    doc["components"] = copy.deepcopy(COMPONENTS)
    doc["components"]["schemas"].update(body_schemas(settings.ttl_max_seconds))
    paths: dict[str, Any] = doc["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            _describe(path, method, operation)
    doc["paths"] = _per_op(paths)
    return doc


def _per_op(paths: dict[str, Any]) -> dict[str, Any]:
    """``/api/v1/lease/{op}`` as the six paths it serves, each with its op's body."""
    described: dict[str, Any] = {}
    for path, item in paths.items():
        if not path.endswith("/{op}"):
            described[path] = item
            continue
        for op in OPS:
            operation = copy.deepcopy(item["post"])
            operation["parameters"] = [p for p in operation["parameters"] if p["name"] != "op"]
            operation["operationId"] = f"lease{op.title()}"
            operation["summary"] = f"Lease {op}"
            _body(operation, f"Lease{op.title()}", required=True)
            described[path.replace("{op}", op)] = {"post": operation}
    return described


def _describe(path: str, method: str, operation: dict[str, Any]) -> None:
    operation.pop("responses", None)
    first, *rest = str(operation.get("summary", method)).split()
    operation["operationId"] = first.lower() + "".join(word.title() for word in rest)
    params = [p for p in operation.get("parameters", []) if p.get("in") != "header"]
    operation["parameters"] = params
    if path == LEASES_PATH:
        _list_operation(operation)
    elif path == WATCH_EVENTS_PATH:
        _watch_operation(operation)
    elif path.startswith(("/api/v1/lease", "/api/v1/scopes")):
        _tenant_operation(path, operation)
    elif path == "/api/v1/namespaces":
        operation["security"] = [{}]
        _body(operation, "NamespaceBody", required=False)
        operation["responses"] = _enveloped(("201", "413", "415", "422", "429", "500", "503"))
    elif path == "/api/v1/verify-provenance":
        operation["security"] = [{}]
        _body(operation, "Verifiable", required=True)
        operation["parameters"] = [*params, ACCEPT_PROVENANCE]
        operation["responses"] = _enveloped(("200", "413", "415", "422", "429", "500", "503"))
    else:
        _plain(path, operation)
    if not operation["parameters"]:
        del operation["parameters"]


def _for_tenants(operation: dict[str, Any]) -> None:
    """An operation of the caller's tenant: anonymous, an API key, or the namespace header, and
    the answer's provenance suite asked for."""
    operation["security"] = TENANT_SECURITY
    operation["parameters"] = [*operation["parameters"], NAMESPACE_HEADER, ACCEPT_PROVENANCE]


def _tenant_operation(path: str, operation: dict[str, Any]) -> None:
    _for_tenants(operation)
    for param in operation["parameters"]:
        if param["name"] == "op" and param["in"] == "path":
            param["schema"] = {"type": "string", "enum": list(OPS)}
        if param["name"] == "scope" and param["in"] == "path":
            param["schema"] = {"type": "string", "minLength": 1, "maxLength": 128}
    if path.startswith("/api/v1/lease"):
        _body(operation, "LeaseBody" if "{op}" in path else "LeaseOpBody", required=True)
        operation["responses"] = _enveloped(LEASE_STATUSES)
        return
    if path.endswith("/heartbeat"):
        _body(operation, "HeartbeatBody", required=True)
    elif path.endswith("/release"):
        _body(operation, "ScopeBody", required=False)
    operation["responses"] = _enveloped(SCOPE_STATUSES)


def _list_operation(operation: dict[str, Any]) -> None:
    """``GET /api/v1/leases``: its query as the route checks it; a bad query is a 400, a bad
    namespace or API key as on every route."""
    limit = {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT_MAX}
    schemas: dict[str, dict[str, Any]] = {
        "limit": limit | {"default": LIST_LIMIT_DEFAULT},
        "cursor": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
    }
    for name, (low, high) in FILTER_LENGTHS.items():
        schemas[name] = {"type": "string", "minLength": low, "maxLength": high}
    for param in operation["parameters"]:
        param["schema"] = schemas[param["name"]]
    _for_tenants(operation)
    operation["responses"] = _enveloped(("200", "400", "401", "422", "429", "500", "503"))


def _watch_operation(operation: dict[str, Any]) -> None:
    """``GET /api/v1/watch/events``: a page of the caller's tenant's events, enveloped. The
    stream (``/api/v1/watch``) is left out: docs/api.md describes its events."""
    _for_tenants(operation)
    operation["responses"] = _enveloped(("200", "400", "401", "403", "422", "429", "500", "503"))


def _body(operation: dict[str, Any], schema: str, required: bool) -> None:
    content = {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}
    operation["requestBody"] = {"required": required, "content": content}


def _enveloped(statuses: tuple[str, ...]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status in statuses:
        schema = "Answer" if status in ("200", "201", "409") else "Refusal"
        response: dict[str, Any] = {
            "description": _DESCRIPTIONS[status],
            "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        }
        if status in ("409", "429", "503"):
            response["headers"] = _RETRY_AFTER
        responses[status] = response
    return responses


def _plain(path: str, operation: dict[str, Any]) -> None:
    """The log, proof, key and health endpoints answer plain JSON (DESIGN §3.4)."""
    answer = LOG_ANSWERS.get(path, {"type": "object"})
    ok = {"description": "The answer", "content": {JSON: {"schema": answer}}}
    responses: dict[str, Any] = {"200": ok}
    if path == "/healthz":
        responses["503"] = {"description": "Storage or a task is unhealthy", **ok}
    else:
        plain = {JSON: {"schema": {"$ref": "#/components/schemas/PlainRefusal"}}}
        if operation.get("parameters"):
            responses["400"] = {"description": _DESCRIPTIONS["400"], "content": plain}
        responses["429"] = {
            "description": _DESCRIPTIONS["429"],
            "content": plain,
            "headers": _RETRY_AFTER,
        }
        responses["500"] = {"description": _DESCRIPTIONS["500"], "content": plain}
        responses["503"] = {"description": _DESCRIPTIONS["503"], "content": plain}
    if path == "/api/v1/log/bundle/{index}":
        operation["parameters"] = [*operation.get("parameters", []), ACCEPT_PROVENANCE]
        responses["422"] = {"description": _DESCRIPTIONS["422"], "content": plain}
    if path == "/api/v1/log/bundle":  # POST: a saved response in, its bundle out
        _body(operation, "SavedResponse", required=True)
        for status in ("413", "415", "422"):
            responses[status] = {"description": _DESCRIPTIONS[status], "content": plain}
    operation["responses"] = responses
