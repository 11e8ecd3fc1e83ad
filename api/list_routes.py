"""``GET /api/v1/leases``: the caller's live leases, a page at a time (docs/api.md, "List").

Thin over ``ledger/lease/listing.py``: the query is checked here, every fault a 400 naming its
parameter; the page's ``next`` travels as an opaque cursor (base64url of the position the
listing returned). In the anonymous tenant, where a name is a capability, a listing needs an
unguessable ``prefix`` or ``scope``: it never shows one caller's names to another
(docs/decisions/0034).
"""

from __future__ import annotations

import binascii
from base64 import urlsafe_b64decode, urlsafe_b64encode
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from api.names import RULE, high_entropy
from api.refusals import NAME_LENGTH, InputError, length_rule, range_rule
from api.requests import caller_tenant, edge_of
from api.responses import respond, suite_of
from api.tenancy import ANONYMOUS
from ledger.lease import listing
from verify.defaults import LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX

LEASES_PATH = "/api/v1/leases"
FILTER_LENGTHS = {"prefix": (1, 256), "scope": NAME_LENGTH, "holder": NAME_LENGTH}
"""A filter is at most as long as what it matches (a resource name, a scope, a holder)."""
CURSOR_BYTES = 64
"""The longest position a cursor may carry (a backend's is a 16-byte digest)."""
PARAMETERS = ("limit", "cursor", *FILTER_LENGTHS)


def refused(code: str, message: str, field: str) -> InputError:
    return InputError(code, message, field, status=400)


def encode_cursor(position: bytes | None) -> str | None:
    return None if position is None else urlsafe_b64encode(position).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> bytes:
    """The position a cursor carries; a 400 naming ``cursor`` if it is not one we made."""
    message = "cursor must be the `next` of an earlier page, as it was given"
    try:
        position = urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise refused("invalid_value", message, "cursor") from None
    if not 0 < len(position) <= CURSOR_BYTES or encode_cursor(position) != cursor:
        raise refused("invalid_value", message, "cursor")
    return position


def _check_query(request: Request) -> None:
    """Each parameter known and given once: a misspelt filter must not list everything."""
    for name in request.query_params:
        if name not in PARAMETERS:
            raise refused("unknown_parameter", f"{name} is not a parameter of this list", name)
        if len(request.query_params.getlist(name)) > 1:
            raise refused("invalid_value", f"{name} must be given once", name)


def _filters(tenant: str, found: dict[str, str | None]) -> listing.Filters:
    for name, (low, high) in FILTER_LENGTHS.items():
        value = found[name]
        if value is not None and not (low <= len(value) <= high and value.isprintable()):
            rule = length_rule(name, low, high) + " of printable characters"
            raise refused("invalid_value", rule, name)
    prefix, scope = found["prefix"], found["scope"]
    secret = (prefix is not None and high_entropy(prefix)) or (
        scope is not None and high_entropy(scope)
    )
    if tenant == ANONYMOUS and not secret:
        message = f"in the anonymous tenant a listing needs a prefix or a scope, and it {RULE}"
        raise refused("low_entropy", message, "prefix")
    return listing.Filters(prefix, scope, found["holder"])


def list_routes(app: FastAPI) -> None:
    @app.get(LEASES_PATH)
    async def list_leases(
        request: Request,
        limit: int | None = None,
        cursor: str | None = None,
        prefix: str | None = None,
        scope: str | None = None,
        holder: str | None = None,
    ) -> Response:
        """List the caller's live leases, a page at a time, by resource prefix, scope or holder."""
        suite_of(request)  # refuse a bad Accept-Provenance before anything else
        _check_query(request)
        tenant = caller_tenant(request, None, None)
        size = LIST_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= size <= LIST_LIMIT_MAX:
            raise refused("out_of_range", range_rule("limit", 1, LIST_LIMIT_MAX), "limit")
        after = b"" if cursor is None else decode_cursor(cursor)
        asked = {"prefix": prefix, "scope": scope, "holder": holder}
        filters = _filters(tenant, asked)
        service = edge_of(request).service
        found = listing.page(service.storage, tenant, filters, service.clock(), size, after)
        data: dict[str, Any] = {"status": "pass", "leases": found.items, "count": len(found.items)}
        data["next"] = encode_cursor(found.next)
        shown = {"limit": size, "cursor": cursor, **asked}
        data |= {name: value for name, value in shown.items() if value is not None}
        return respond(request, data | {"ledger": service.position().as_data()}, 200)
