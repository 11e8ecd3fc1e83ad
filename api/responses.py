"""How every answer is written: `{"data", "_provenance"}` envelopes for the lease, namespace
and scope endpoints (DESIGN §3.3, §5), plain JSON for the log endpoints (§3.4)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response

from api.requests import BODY_KEY, edge_of, header
from api.schemas import InputError
from ledger.lease.calls import now_ms
from ledger.lease.provenance import UNPARSED, canonical_request, dumps
from ledger.log.text import iso
from verify.dataintegrity import JCS_SUITE, SUITES

JSON = "application/json"


def raw(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status, media_type=JSON)


def suite_of(request: Request) -> str:
    """`Accept-Provenance` picks the cryptosuite; RDF canonicalization costs ~2 ms, so opt-in."""
    asked = header(request, "accept-provenance")
    if asked is None:
        return JCS_SUITE
    if asked.strip() not in SUITES:
        message = f"Accept-Provenance must be one of {', '.join(SUITES)}"
        raise InputError("invalid_value", message, "Accept-Provenance")
    return asked.strip()


def request_path(request: Request) -> str:
    """``request.url.path`` without building the URL: Starlette's URL is the scope's
    path with ``?``, ``#`` and ``\\`` escaped; behind a ``root_path``, the URL itself."""
    scope = request.scope
    if scope.get("root_path"):
        return request.url.path
    path: str = scope["path"]
    return path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


def _now(request: Request) -> int:
    """The runtime's signing clock (fixed in tests; a key switch due by then is made first); the
    wall clock before the runtime has started."""
    edge = getattr(request.app.state, "edge", None)
    return now_ms() if edge is None else int(edge.core.signing_clock())


def respond(
    request: Request,
    data: dict[str, Any],
    status: int,
    headers: dict[str, str] | None = None,
    cited: tuple[bytes | None, dict[str, str] | None] = (None, None),
    body: bytes | None = None,
    suite: str | None = None,
    document: Any = UNPARSED,
    owner_token: str | None = None,
) -> Response:
    """The envelope: `data` and a credential over it, its request and its ledger entry
    (``cited``: the entry's bytes and the pseudonyms it names, carried up from the service).

    A route that read the body and chose the suite passes them (and the body's JSON
    ``document``, if it parsed it); error answers, raised before or while the route ran, fall
    back to what the request says. ``owner_token``, a grant's, is shown to its caller as the
    last member of ``data`` and never hashed into the receipt (DESIGN §5).
    """
    issuer = edge_of(request).issuer
    if suite is None:
        try:
            suite = suite_of(request)
        except InputError:
            suite = JCS_SUITE  # the refusal of a bad Accept-Provenance is itself signed with jcs
    if body is None:
        body = request.scope.get(BODY_KEY)
    canonical = canonical_request(request.method, request_path(request), body, document)
    entry, names = cited
    now = iso(_now(request))
    envelope = issuer.encode_answer(data, canonical, entry, names, now, suite, owner_token)
    return answer_response(envelope, status, headers)


class _JSONAnswer(Response):
    """A Response whose raw headers are made directly: those given, then
    content-length, then content-type, as ``Response.init_headers`` makes them for a JSON body
    under the conditions :func:`answer_response` checks."""

    media_type = JSON

    def __init__(self, body: bytes, status: int, headers: dict[str, str] | None) -> None:
        self.status_code, self.background, self.body = status, None, body
        raw = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()
        ]
        raw.append((b"content-length", str(len(body)).encode("latin-1")))
        raw.append((b"content-type", b"application/json"))
        self.raw_headers = raw


_OWN_HEADERS = frozenset({"content-length", "content-type"})


def answer_response(body: bytes, status: int, headers: dict[str, str] | None = None) -> Response:
    """``Response(body, status, headers, media_type=JSON)``, the same bytes on the wire."""
    if (
        status < 200
        or status in (204, 304)
        or (headers and _OWN_HEADERS & {*map(str.lower, headers)})
    ):
        return Response(body, status, headers, media_type=JSON)
    return _JSONAnswer(body, status, headers)


def error_response(
    request: Request, error: InputError, headers: dict[str, str] | None = None
) -> Response:
    data = {"status": "fail", "error": error.as_data()}
    return respond(request, data, error.status, headers)


STORAGE_UNAVAILABLE = (
    "the ledger's storage is unavailable: the outcome is not known; retry (a lease call with the"
    " same requestId is answered once)"
)
"""The message of every 503 ``storage_unavailable``: the cause is in the server's log."""


def unknown_response(request: Request, message: str, status: int = 503) -> Response:
    data = {"status": "unknown", "error": {"code": "storage_unavailable", "message": message}}
    return respond(request, data, status, {"Retry-After": "1"})
