"""What every route needs from a request: its body within limits, parsed strictly; the shared
runtime; and who is calling, rate-limited per tenant (DESIGN §3.1, §3.3)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from api.schemas import InputError, input_error
from api.tenancy import RateLimiter, Tenancy
from ledger.service import LeaseService


@dataclass
class Runtime:
    """What the routes share; built in the lifespan, so tests get a fresh one per app."""

    service: LeaseService
    tenancy: Tenancy
    limiter: RateLimiter


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def caller_tenant(request: Request, namespace: str | None, sub: str | None) -> str:
    """The caller's tenant, rate-limited per tenant, and per client address as well for the
    tenants anyone can enter (the anonymous one, and namespaces, which are free to mint)."""
    runtime = runtime_of(request)
    namespace = namespace or request.headers.get("tenure-namespace")
    tenant = runtime.tenancy.resolve(request.headers.get("authorization"), namespace, sub)
    _limit(runtime, tenant, "tenant")
    if not tenant.startswith("key/"):
        limit_client(request)
    return tenant


def limit_client(request: Request) -> None:
    """Rate-limit by client address: for endpoints without a tenant (verify, log, namespaces)."""
    host = request.client.host if request.client is not None else "unknown"
    _limit(runtime_of(request), "addr/" + host, "client address")


def _limit(runtime: Runtime, bucket: str, who: str) -> None:
    wait = runtime.limiter.retry_after(bucket, time.monotonic())
    if wait is not None:
        raise InputError("rate_limited", f"too many requests for this {who}", status=429) from (
            RetryAfter(wait)
        )


class RetryAfter(Exception):
    """Why a 429 was raised: the seconds until the tenant's bucket has a token again."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


async def read_body(request: Request, limit: int) -> bytes:
    """Refuse a body over `limit` with 413 before reading (or parsing) the rest of it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
        chunks.append(chunk)
    body = b"".join(chunks)
    request.state.body = body
    check_depth(body)
    return body


MAX_DEPTH = 32
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def check_depth(body: bytes) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH arrays/objects before any parser recurses into
    it (every endpoint reads its body through `read_body`, so this is the one place)."""
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b'""', body)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > MAX_DEPTH:
            message = f"JSON nests deeper than {MAX_DEPTH} levels of arrays and objects"
            raise InputError("too_deep", message)


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: bytes) -> M:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as error:
        raise input_error(error) from error


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise InputError("malformed_json", f"body is not JSON: {error}") from error
