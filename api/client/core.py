"""The sans-IO core that ``Client`` and ``AsyncClient`` share: it builds each HTTP call of
docs/api.md, interprets each answer (verifying its receipt, raising the refusals), and drives
the retries — while the shells only move bytes and sleep.

A call runs as a generator (a *flow*) that yields a :class:`Request` to send or a
:class:`Sleep` to wait, is sent back the :class:`Reply` (or has :class:`NetworkError` thrown
in when none came), and returns the typed answer. Retries are safe: a mutating lease call
carries a fresh unguessable ``requestId`` that every retry repeats, so the server answers a
retry with what it did the first time instead of doing it twice.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from api.client.answers import Answer, LeaseAnswer, NamespaceAnswer, ScopeAnswer
from api.client.errors import InvalidRequest, ReceiptInvalid, TenureError, Unavailable
from api.client.meaning import raise_for, same_request
from api.client.trust import Trust, check_answer, check_checkpoint, check_witnessed, trusted_dids
from verify import ijson
from verify.errors import MalformedInput
from verify.jcs import canonicalize
from verify.receipt import SECRET_REQUEST_FIELDS
from verify.witnesses import WitnessPolicy

A = TypeVar("A", bound=Answer)
IDEMPOTENT_OPS = frozenset({"acquire", "wait", "renew", "release", "complete"})
FIELD_NAMES = {
    "ttl": "ttlSeconds",
    "wait": "waitSeconds",
    "owner_token": "ownerToken",
    "fencing_token": "fencingToken",
    "request_id": "requestId",
    "tenant_id": "tenantId",
    "dead_seconds": "deadSeconds",
}


class NetworkError(TenureError):
    """No answer came back (connection refused or reset, timeout); thrown into a flow."""


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    body: bytes | None
    timeout: float


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Call(Generic[A]):
    """One API call: what to send, what answer type to build, how to check it."""

    request: Request
    kind: type[A]
    signed: bool = True  # a {"data", "_provenance"} envelope (else raw JSON, e.g. /log)
    canonical: bytes | None = None  # the request as the manifest hashes it, when we know it
    expect: tuple[tuple[str, str], ...] = ()  # what a 200/201/409 answer's data must repeat


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter (delay in [0, base·2^n))."""

    attempts: int = 5
    base: float = 0.1
    cap: float = 3.0

    def delay(self, retry: int, unit: float) -> float:
        return unit * min(self.cap, self.base * 2.0**retry)


Flow = Generator[Request | Sleep, Reply | None, A]


def new_request_id() -> str:
    """192 random bits: a retry repeats it; nobody else can guess it."""
    return "req_" + secrets.token_urlsafe(24)


def headers(api_key: str | None, namespace: str | None) -> dict[str, str]:
    """The headers every call of one client carries (docs/api.md, "Who is calling")."""
    sent = {"content-type": "application/json", "accept": "application/json"}
    if api_key:
        sent["authorization"] = f"Bearer {api_key}"
    if namespace:
        sent["tenure-namespace"] = namespace
    return sent


def canonical_request(method: str, path: str, body: Any) -> bytes:
    """What the receipt's ``tenure.request`` assertion hashes (docs/decisions/0002)."""
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in SECRET_REQUEST_FIELDS}
    return canonicalize({"method": method, "path": path, "body": body})


class Core:
    """Builds calls and interprets answers for one client; holds the pinned trust.

    Without ``trust`` (and unless ``verify`` is False) the keyring the server serves is fetched
    before the first signed call and pinned, and fetched again once when an answer names a
    key outside it (a rotation): answers are then bound to their requests and signed by the
    keys this server named, which proves less than keys pinned out of band."""

    def __init__(
        self, trust: Trust | None, timeout: float, retry: RetryPolicy, verify: bool = True
    ) -> None:
        self.trusted = trusted_dids(trust)
        self.served = trust is None and verify  # trust the keys the server serves
        self.timeout = timeout
        self.retry = retry
        self.witnesses: WitnessPolicy | None = None
        """K of these witnesses must have cosigned a checkpoint the client reads."""

    def lease(self, op: str, **fields: Any) -> Call[LeaseAnswer]:
        """A lease operation; ``fields`` use Python names (``ttl``, ``owner_token``, …)."""
        kept = {k: v for k, v in fields.items() if v is not None or k == "result"}  # null is one
        body = {FIELD_NAMES.get(k, k): v for k, v in kept.items()}
        if op in IDEMPOTENT_OPS and "requestId" not in body:
            body["requestId"] = new_request_id()
        waiting = float(body.get("waitSeconds") or (30 if op == "wait" else 0))
        call = self._post(f"/api/v1/lease/{op}", body, LeaseAnswer, waiting)
        return replace(call, expect=(("op", op), ("resource", str(body.get("resource")))))

    def scope(self, scope: str, action: str | None = None, **fields: Any) -> Call[ScopeAnswer]:
        path = f"/api/v1/scopes/{quote(scope, safe='')}" + (f"/{action}" if action else "")
        if action is None:
            canonical = canonical_request("GET", path, None) if _plain(scope) else None
            return Call(Request("GET", path, None, self.timeout), ScopeAnswer, True, canonical)
        body = {FIELD_NAMES.get(k, k): v for k, v in fields.items() if v is not None}
        call = self._post(path, body, ScopeAnswer)
        return call if _plain(scope) else replace(call, canonical=None)

    def namespace(self) -> Call[NamespaceAnswer]:
        return self._post("/api/v1/namespaces", {}, NamespaceAnswer)

    def verify_provenance(self, document: Any) -> Call[Answer]:
        return self._post("/api/v1/verify-provenance", document, Answer)

    def raw(self, path: str) -> Call[Answer]:
        return Call(Request("GET", path, None, self.timeout), Answer, signed=False)

    def _post(self, path: str, body: Any, kind: type[A], waiting: float = 0.0) -> Call[A]:
        encoded = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        # The server redacts secret-looking keys of a `result` before hashing; not redone here.
        known = not (isinstance(body, dict) and "result" in body)
        canonical = _canonical("POST", path, body) if known else None
        return Call(Request("POST", path, encoded, self.timeout + waiting), kind, True, canonical)

    def flow(
        self,
        call: Call[A],
        clock: Callable[[], float],
        jitter: Callable[[], float],
        deadline: float | None = None,
    ) -> Flow[A]:
        """Send ``call``, retrying (same request, same requestId) on no answer or an unknown
        outcome, until an answer is known, the attempts run out, or ``deadline`` (on
        ``clock``) would pass."""
        if call.signed and self.served and self.trusted is None:
            yield from self.pin(clock, jitter, deadline)
        last: TenureError = Unavailable("no attempt was made")
        for attempt in range(self.retry.attempts):
            request = call.request
            if attempt:
                pause = self.retry.delay(attempt - 1, jitter())
                if deadline is not None and clock() + pause >= deadline:
                    break
                yield Sleep(pause)
            if deadline is not None:
                request = replace(
                    request, timeout=max(0.05, min(request.timeout, deadline - clock()))
                )
            try:
                reply = yield request
            except NetworkError as error:
                last = error
                continue
            assert reply is not None
            try:
                return (yield from self._checked(call, reply, clock, jitter, deadline))
            except Unavailable as error:
                last = error
        raise Unavailable(f"outcome unknown: {last}", last.answer) from last

    def pin(
        self, clock: Callable[[], float], jitter: Callable[[], float], deadline: float | None
    ) -> Generator[Request | Sleep, Reply | None, None]:
        """Fetch and pin the keyring the server serves (``GET /api/v1/keys``)."""
        keyring = yield from self.flow(self.raw("/api/v1/keys"), clock, jitter, deadline)
        try:
            self.trusted = trusted_dids(keyring.data)
        except (ValueError, KeyError, TypeError) as error:
            raise ReceiptInvalid(f"the server's keyring is unusable: {error}", "issuer") from error

    def _checked(
        self,
        call: Call[A],
        reply: Reply,
        clock: Callable[[], float],
        jitter: Callable[[], float],
        deadline: float | None,
    ) -> Flow[A]:
        """``interpret``, re-pinning the served keyring once if the issuer is not in it."""
        try:
            return self.interpret(call, reply)
        except ReceiptInvalid as error:
            if not (self.served and error.check == "issuer"):
                raise
        yield from self.pin(clock, jitter, deadline)
        return self.interpret(call, reply)

    def interpret(self, call: Call[A], reply: Reply) -> A:
        """The typed answer of ``reply``, or the error it means; its receipt checked first."""
        document = _json(reply.body)
        if not call.signed:
            return self._raw(call, reply, document)
        if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
            if reply.status >= 500:
                raise Unavailable(f"HTTP {reply.status} without an answer")
            raise InvalidRequest(f"HTTP {reply.status}: not a tenure answer", None, reply.status)
        if self.trusted is not None:
            bound = call.canonical if reply.status in (200, 201, 409) else None
            check_answer(document, self.trusted, bound)
        answer = call.kind(document["data"], document.get("_provenance"), reply.status)
        if reply.status in (200, 201, 409):
            same_request(call.expect, answer)
        raise_for(answer, reply.status, reply.headers)
        return answer

    def _raw(self, call: Call[A], reply: Reply, document: Any) -> A:
        if reply.status >= 500:
            raise Unavailable(f"HTTP {reply.status}")
        if reply.status >= 400 or not isinstance(document, dict):
            raise InvalidRequest(f"HTTP {reply.status} on {call.request.path}", None, reply.status)
        if self.trusted is not None and "note" in document:
            check_checkpoint(document, self.trusted)
        if self.witnesses is not None and "note" in document:
            check_witnessed(document, self.witnesses)
        return call.kind(document, None, reply.status)


def _json(body: bytes) -> Any:
    """The answer read as strictly as ``verify-provenance`` reads it (I-JSON), or None."""
    try:
        return ijson.loads(body, "the answer")
    except MalformedInput:
        return None


def _canonical(method: str, path: str, body: Any) -> bytes | None:
    """The request's canonical form, or None when it has none (an integer beyond 2^53): the
    server then refuses it, naming the field."""
    try:
        return canonical_request(method, path, body)
    except MalformedInput:
        return None


def _plain(name: str) -> bool:
    """A scope name that travels in the path unchanged, so the request hash is predictable."""
    return quote(name, safe="") == name
