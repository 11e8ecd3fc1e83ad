"""``Client.watch``: a tenant's lease events from ``GET /api/v1/watch`` (Server-Sent Events),
each receipt checked like every answer, resumed with ``Last-Event-ID`` after a dropped
connection or an ended stream, so no event is missed or seen twice."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from api.client.answers import Answer
from api.client.core import Call, Core, Request, canonical_request
from api.client.errors import Unavailable
from api.client.trust import check_answer
from api.client.wiring import reply_of

PATH = "/api/v1/watch"
EVENTS_PATH = "/api/v1/watch/events"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One lease event: ``op`` is grant, renew, release, expire, revoke or complete; ``entry``
    the ledger entry's exact bytes, whose RFC 9162 leaf hash is ``leaf_hash``."""

    op: str
    index: int
    resource: str | None
    fencing_token: int
    time: str
    leaf_hash: str
    entry: bytes
    answer: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WatchGap:
    """Entries ``[start, end)`` the server did not deliver, and why."""

    start: int
    end: int
    reason: str
    message: str


def watch(
    http: httpx.Client,
    core: Core,
    query: dict[str, Any],
    reconnects: int,
) -> Iterator[WatchEvent | WatchGap]:
    """The events, reconnecting up to ``reconnects`` times in a row after a failure (an
    ``end`` event, a stream the server closed, resumes at once and costs nothing)."""
    last: int | None = None  # the id of the last event yielded: where a reconnect resumes
    failures = 0
    while True:
        headers = {} if last is None else {"Last-Event-ID": str(last)}
        try:
            with http.stream("GET", PATH, params=query, headers=headers, timeout=_TIMEOUT) as got:
                if got.status_code != 200:
                    _refused(core, got)
                for kind, data in _events(got.iter_lines()):
                    failures = 0
                    document = json.loads(data)
                    item = _item(core, kind, document)
                    if kind == "ready":  # before any event, a reconnect starts here again,
                        if last is None:  # not at a later head
                            query = {**query, "from": document["data"]["from"]}
                        continue
                    if item is None:
                        break
                    last = item.index if isinstance(item, WatchEvent) else item.end - 1
                    yield item
        except httpx.TransportError as error:
            failures += 1
            if failures > reconnects:
                raise Unavailable(f"the watch failed {failures} times: {error}") from error
            time.sleep(min(5.0, 0.2 * 2**failures))


_TIMEOUT = httpx.Timeout(30.0, read=None)  # a watch waits for events as long as it lasts


def _refused(core: Core, got: httpx.Response) -> None:
    got.read()
    call = Call(Request("GET", PATH, None, core.timeout), Answer, True, None)
    core.interpret(call, reply_of(got))
    raise Unavailable(f"HTTP {got.status_code} on {PATH}")


def _events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event type, data) of each Server-Sent Event; comments (heartbeats) skipped."""
    kind, data = "message", ""
    for line in lines:
        if not line:
            if data:
                yield kind, data
            kind, data = "message", ""
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()


def _item(core: Core, kind: str, document: Any) -> WatchEvent | WatchGap | None:
    """The typed event, its receipt checked; None for ``ready`` and ``end``."""
    if core.trusted is not None:
        check_answer(document, core.trusted, canonical_request("GET", PATH, None))
    data = document["data"]
    if kind == "lease":
        return WatchEvent(
            data["op"],
            data["ledger"]["logIndex"],
            data["resource"],
            data["fencingToken"],
            data["time"],
            data["ledger"]["leafHash"],
            data["entry"].encode(),
            document,
        )
    if kind == "gap":
        return WatchGap(data["from"], data["to"], data["reason"], data["message"])
    return None  # ready (the stream's start) or end (the stream is over)


def events_call(core: Core, from_index: int | None, limit: int, **filters: str) -> Call[Answer]:
    """One signed page of events (``GET /api/v1/watch/events``): ``data.events``, and
    ``data.next``, the index to ask from next."""
    query = {"from": from_index, "limit": limit, **filters}
    sent = {name: value for name, value in query.items() if value is not None}
    request = Request("GET", EVENTS_PATH + "?" + urlencode(sent), None, core.timeout)
    return Call(request, Answer, True, canonical_request("GET", EVENTS_PATH, None))
