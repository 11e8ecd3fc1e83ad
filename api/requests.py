"""What every route needs from a request: its body within limits, parsed strictly; the shared
runtime; and who is calling, rate-limited per tenant (DESIGN §3.1, §3.3)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from api.accel import fastjson
from api.refusals import InputError, Ranges, not_json
from api.schemas import input_error
from api.tenancy import RateLimiter, Tenancy
from ledger.lease.provenance import UNPARSED
from ledger.writer.service import LeaseService
from verify import ijson

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from api.watch_stream import WatchHub
    from api.witness_push import Pusher
    from ledger.lease.provenance import Issuer
    from ledger.log.view import LogReader
    from ledger.runtime import Runtime


@dataclass
class EdgeState:
    """Everything the routes share, in one typed object (``app.state.edge``): the ledger's
    runtime and the edge's own parts. Built in the lifespan, so tests get a fresh one per app."""

    core: Runtime
    tenancy: Tenancy
    limiter: RateLimiter
    metrics: CollectorRegistry
    witnesses: Pusher | None = None
    watch_hub: WatchHub | None = None

    @property
    def service(self) -> LeaseService:
        return self.core.service

    @property
    def log(self) -> LogReader:
        return self.core.log

    @property
    def issuer(self) -> Issuer:
        return self.core.issuer


def edge_of(request: Request) -> EdgeState:
    """The routes' shared state; only the lifespan sets it."""
    edge: EdgeState = request.app.state.edge
    return edge


CLEANUP = "#cleanup"
"""Suffix of the buckets of renew, release, scope release, heartbeats and replays, so a
throttled tenant can always clean up and keep its dead-man switch alive."""


HEADERS_KEY = "tenure.headers"
"""The scope key under which :func:`header` keeps the headers it found."""
BODY_KEY = "tenure.body"
"""The scope key under which :func:`read_body` keeps the body it read (for error answers)."""
_READ_NAMES = ("accept-provenance", "authorization", "content-length", "content-type")
_READ = {name.encode("latin-1"): name for name in (*_READ_NAMES, "tenure-namespace")}


def header(request: Request, name: str) -> str | None:
    """``request.headers.get(name)`` for the headers the routes read (``name`` in lowercase):
    all of them found in one pass over the raw headers per request, where Starlette
    walks the list once per lookup. The first of a repeated header, as Starlette's."""
    scope = request.scope
    found: dict[str, str] | None = scope.get(HEADERS_KEY)
    if found is None:
        found = scope[HEADERS_KEY] = _read_headers(scope["headers"])
    if name in found:
        return found[name]
    return None if name.encode("latin-1") in _READ else request.headers.get(name)


def _read_headers(raw: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    read = _READ
    for key, value in raw:
        name = read.get(key)
        if name is not None and name not in found:
            found[name] = value.decode("latin-1")
    return found


def caller_tenant(
    request: Request,
    namespace: str | None,
    sub: str | None,
    cleanup: bool = False,
    runtime: EdgeState | None = None,
) -> str:
    """The caller's tenant, rate-limited per tenant, and per client address as well for the
    tenants anyone can enter (the anonymous one, and namespaces, which are free to mint).
    ``cleanup`` calls (renew, release) draw on an allowance of their own; a route
    that holds the ``runtime`` already passes it."""
    runtime = runtime or edge_of(request)
    namespace = namespace or header(request, "tenure-namespace")
    tenant = runtime.tenancy.resolve(header(request, "authorization"), namespace, sub)
    suffix = CLEANUP if cleanup else ""
    _limit(runtime, tenant + suffix, "tenant")
    if not tenant.startswith("key/"):
        limit_client(request, suffix)
    return tenant


def limit_client(request: Request, suffix: str = "") -> None:
    """Rate-limit by client address: for endpoints without a tenant (verify, log, namespaces)."""
    host = request.client.host if request.client is not None else "unknown"
    _limit(edge_of(request), "addr/" + host + suffix, "client address")


def _limit(runtime: EdgeState, bucket: str, who: str) -> None:
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
    check_content_type(header(request, "content-type"))
    declared = header(request, "content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
    body = await _receive_body(request, limit)
    request.scope[BODY_KEY] = body
    check_depth(body)
    return body


async def _receive_body(request: Request, limit: int) -> bytes:
    """``request.body()`` read from the ASGI messages directly (Starlette's stream is
    an async generator per request), refused as soon as it passes ``limit``; the request keeps
    it, so a later ``request.body()`` or ``stream()`` gives the same bytes."""
    if hasattr(request, "_body"):
        return await request.body()
    chunks, size, receive = [], 0, request.receive
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise InputError("too_large", f"body exceeds {limit} bytes", status=413)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    request._body = body
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
        return  # it cannot nest deeper than the brackets it opens: most bodies
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
    """A body as its model, and as ``json.loads`` read it (``ledger.lease.provenance.UNPARSED`` if
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
    """A signed document (verify-provenance), read as strictly as ``verify-provenance`` does."""
    try:
        return ijson.loads(body, "the body")
    except ijson.DuplicateKey as error:
        raise InputError("duplicate_key", str(error), error.key) from error
    except ijson.NotIJSON as error:
        raise not_json(str(error)) from error


_UNIQUE = json.JSONDecoder(object_pairs_hook=ijson.unique_pairs)


def loads_unique(body: bytes) -> Any:
    """``json.loads`` with ``ijson.unique_pairs`` as its pairs hook, one decoder made once
    (json.loads makes a decoder and its scanner per call when given a hook): the same decoding
    of bytes (RFC 8259 §8.1 encoding detection, a UTF-8 BOM dropped), the same values and
    errors."""
    return _UNIQUE.decode(body.decode(json.detect_encoding(body), "surrogatepass"))


def _duplicate(error: ijson.RepeatedKey) -> InputError:
    message = f"duplicate key {error.key!r} in a JSON object (I-JSON, RFC 7493 §2.3)"
    return InputError("duplicate_key", message, error.key)


_read_flat: Callable[[bytes], dict[str, Any] | None] | None = fastjson.loads_flat
"""The orjson reader of flat bodies (``api.accel``'s ``orjson``), or None: the decoder only."""


def use_orjson(on: bool) -> None:
    """Switch the orjson reader (process-wide: the app created last sets it)."""
    global _read_flat
    _read_flat = fastjson.loads_flat if on else None


def refuse_duplicate_keys(body: bytes) -> Any:
    """Refuse a body whose objects repeat a key; a body that is not JSON is left to the parser
    that reports it. Returns the document read (``json.loads``'s value: with no key repeated
    the pairs make the same dicts), or ``UNPARSED`` where it read none."""
    if b'"' not in body:
        return UNPARSED
    flat = _read_flat(body) if _read_flat is not None else None
    if flat is not None:
        return flat
    try:
        return loads_unique(body)
    except ijson.RepeatedKey as error:
        raise _duplicate(error) from error
    except (ValueError, RecursionError):
        return UNPARSED
