"""What every route needs from a request: its body within limits, parsed strictly; the shared
runtime; and who is calling, rate-limited per tenant (DESIGN §3.1, §3.3)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from api.refusals import InputError, Ranges, not_json
from api.schemas import input_error
from api.tenancy import RateLimiter, Tenancy
from ledger.provenance import UNPARSED
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


CLEANUP = "#cleanup"
"""Suffix of the buckets of renew and release, so a throttled tenant can always clean up."""


def caller_tenant(
    request: Request,
    namespace: str | None,
    sub: str | None,
    cleanup: bool = False,
    runtime: Runtime | None = None,
) -> str:
    """The caller's tenant, rate-limited per tenant, and per client address as well for the
    tenants anyone can enter (the anonymous one, and namespaces, which are free to mint).
    ``cleanup`` calls (renew, release) draw on an allowance of their own (issue 14); a route
    that holds the ``runtime`` already passes it."""
    runtime = runtime or runtime_of(request)
    namespace = namespace or request.headers.get("tenure-namespace")
    tenant = runtime.tenancy.resolve(request.headers.get("authorization"), namespace, sub)
    suffix = CLEANUP if cleanup else ""
    _limit(runtime, tenant + suffix, "tenant")
    if not tenant.startswith("key/"):
        limit_client(request, suffix)
    return tenant


def limit_client(request: Request, suffix: str = "") -> None:
    """Rate-limit by client address: for endpoints without a tenant (verify, log, namespaces)."""
    host = request.client.host if request.client is not None else "unknown"
    _limit(runtime_of(request), "addr/" + host + suffix, "client address")


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
    """Refuse a body that is not JSON by its Content-Type (415), or over `limit` (413), before
    reading (or parsing) the rest of it."""
    check_content_type(request.headers.get("content-type"))
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


def check_content_type(declared: str | None) -> None:
    """A body is JSON: ``application/json`` or a ``+json`` type; no Content-Type is taken as
    JSON, anything else is 415 (curl's ``-d`` sends a form type: use ``--json``)."""
    if declared is None:
        return
    media = declared.partition(";")[0].strip().lower()
    if media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        return
    message = (
        f"Content-Type must be application/json, not {media or 'empty'!r}"
        " (with curl, send the body with --json)"
    )
    raise InputError("unsupported_media_type", message, "Content-Type", status=415)


MAX_DEPTH = 32
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def check_depth(body: bytes) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH arrays/objects before any parser recurses into
    it (every endpoint reads its body through `read_body`, so this is the one place)."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return  # it cannot nest deeper than the brackets it opens: most bodies (issue 10)
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b'""', body)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > MAX_DEPTH:
            message = f"JSON nests deeper than {MAX_DEPTH} levels of arrays and objects"
            raise InputError("too_deep", message)


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: bytes, ranges: Ranges | None = None) -> M:
    """The body as ``model``, strictly: I-JSON (no duplicate keys), then the schema's rules."""
    return parse_body(model, body, ranges).model


class Parsed(NamedTuple, Generic[M]):
    """A body as its model, and as ``json.loads`` read it (``ledger.provenance.UNPARSED`` if
    it was not read: no string in it, or not JSON) for the receipt's canonical request."""

    model: M
    document: Any


def parse_body(model: type[M], body: bytes, ranges: Ranges | None = None) -> Parsed[M]:
    """:func:`parse`, keeping the document the duplicate-key check read (it is not read twice)."""
    document = refuse_duplicate_keys(body)
    try:
        return Parsed(model.model_validate_json(body or b"{}"), document)
    except ValidationError as error:
        raise input_error(error, ranges) from error


def parse_json(body: bytes) -> Any:
    """Any JSON document (verify-provenance), refusing duplicate keys."""
    try:
        return loads_unique(body)
    except DuplicateKey as error:
        raise _duplicate(error) from error
    except ValueError as error:
        raise not_json(str(error)) from error


class DuplicateKey(ValueError):
    """A JSON object names a member twice (RFC 7493 §2.3 forbids it)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return found


_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique)


def loads_unique(body: bytes) -> Any:
    """``json.loads(body, object_pairs_hook=_unique)`` with one decoder made once (json.loads
    makes a decoder and its scanner per call when given a hook): the same decoding of bytes
    (RFC 8259 §8.1 encoding detection, a UTF-8 BOM dropped), the same values and errors."""
    return _UNIQUE.decode(body.decode(json.detect_encoding(body), "surrogatepass"))


def _duplicate(error: DuplicateKey) -> InputError:
    message = f"duplicate key {error.key!r} in a JSON object (I-JSON, RFC 7493 §2.3)"
    return InputError("duplicate_key", message, error.key)


def refuse_duplicate_keys(body: bytes) -> Any:
    """Refuse a body whose objects repeat a key; a body that is not JSON is left to the parser
    that reports it. Returns the document read (``json.loads``'s value: with no key repeated
    the pairs make the same dicts), or ``UNPARSED`` where it read none."""
    if b'"' not in body:
        return UNPARSED
    try:
        return loads_unique(body)
    except DuplicateKey as error:
        raise _duplicate(error) from error
    except (ValueError, RecursionError):
        return UNPARSED
