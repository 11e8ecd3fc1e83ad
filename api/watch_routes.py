"""``GET /api/v1/watch``: a tenant's lease events as Server-Sent Events, read from the ledger;
``GET /api/v1/watch/events``: the same events as one signed page (the MCP tool's).

Each event is a signed answer citing its entry (``id:`` is its log index, so ``Last-Event-ID``
resumes); gaps are said as ``gap`` events, and a stream ends with an ``end`` event saying why
(docs/decisions/0038-watch-the-ledger.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from api.refusals import MAX_SAFE_INTEGER, NAME_LENGTH
from api.requests import caller_tenant, edge_of, header
from api.responses import request_path, respond, suite_of
from api.schemas import InputError
from api.settings import Settings
from api.tenancy import ANONYMOUS
from api.watch_stream import EventStream, WatchHub
from ledger.backends import open_tenant_names
from ledger.keys.keyring import load_or_create_names_key
from ledger.keys.names import NameCodec
from ledger.lease.entries import Pseudonyms, pseudonyms_of
from ledger.lease.provenance import canonical_request
from ledger.lease.watch import Filters, Gap, Selector, in_order, start_of
from ledger.lease.watch_names import TenantNames
from ledger.log.text import iso

Index = Annotated[int | None, Query(alias="from", ge=0, le=MAX_SAFE_INTEGER)]
Prefix = Annotated[str | None, Query(max_length=256)]  # a resource name's length
Name = Annotated[str | None, Query(max_length=NAME_LENGTH[1])]
WATCH_EVENTS_PATH = "/api/v1/watch/events"
READ_CHUNK = 256  # entries read at a time
PAGE_MAX, SCAN_MAX = 100, 10_000  # a page's events, and the entries one page reads at most
ANONYMOUS_WATCH = (
    "a watch needs a tenant of your own (an API key or a namespace): the anonymous tenant's"
    " events are every anonymous caller's, and there a resource's name is its secret"
)


class Watch:
    """One watch's reading and signing: its tenant, filters, names and request."""

    def __init__(self, request: Request, hub: WatchHub, tenant: str, filters: Filters) -> None:
        core = edge_of(request).core
        self.core, self.hub = core, hub
        names = Pseudonyms.derive(core.service.master_secret, tenant)
        self._names = TenantNames(tenant, names, hub.names_read)
        self.selector = Selector(names, filters, self._name_of)
        self._canonical = canonical_request("GET", request_path(request), None)
        self._suite = suite_of(request)

    def _name_of(self, pseudonym: str, index: int) -> str | None:
        return self._names.name_of(pseudonym, index, self.hub.size)

    def read(self, start: int, end: int) -> list[tuple[int, bytes] | Gap]:
        """Entries ``[start, end)`` in order, a gap said for any that cannot be read."""
        found = list(in_order(start, self.core.storage.entries(start, end)))
        last = start - 1
        for item in found:
            last = item.end - 1 if isinstance(item, Gap) else item[0]
        if last < end - 1:
            message = f"entries {last + 1}..{end - 1} could not be read from the ledger"
            found.append(Gap(last + 1, end, "missing", message))
        return found

    def signed(
        self, data: dict[str, Any], entry: bytes | None = None, fields: dict[str, Any] | None = None
    ) -> bytes:
        """``{data, _provenance}``, citing the event's entry as a lease answer does."""
        names = None if fields is None else pseudonyms_of(fields)
        now = iso(int(self.core.signing_clock()))
        return self.core.issuer.encode_answer(data, self._canonical, entry, names, now, self._suite)

    def sse(self, kind: str, data: dict[str, Any], index: int | None, **cited: Any) -> bytes:
        """One Server-Sent Event; ``id:`` only where a resume may start after it."""
        head = f"event: {kind}\n" + ("" if index is None else f"id: {index}\n")
        return head.encode() + b"data: " + self.signed(data, **cited) + b"\n\n"

    def ending(self, reason: str, message: str) -> bytes:
        return self.sse("end", {"status": "pass", "reason": reason, "message": message}, None)


async def events(watch: Watch, start: int, settings: Settings) -> AsyncIterator[bytes]:
    """The stream's events from ``start``: ``ready`` first, gaps said, heartbeats while
    quiet, ``end`` when nothing was sent for ``watch_idle_seconds``."""
    clock = asyncio.get_running_loop().time
    ready = {"status": "pass", "from": start, "treeSize": watch.hub.size}
    yield watch.sse("ready", ready, None)  # where a reconnect before any event starts again
    index, gap = start_of(start, watch.hub.size, settings.watch_replay_max)
    if gap is not None:
        yield watch.sse("gap", gap.as_data(), gap.end - 1)
    quiet_since = clock()
    while True:
        size = watch.hub.size
        if index < size:
            end = min(size, index + READ_CHUNK)
            for item in watch.read(index, end):
                if isinstance(item, Gap):
                    yield watch.sse("gap", item.as_data(), item.end - 1)
                    continue
                found = watch.selector.event(*item)
                if found is not None:
                    yield watch.sse("lease", found[0], item[0], entry=item[1], fields=found[1])
                    quiet_since = clock()
            index = end
            continue
        idle = settings.watch_idle_seconds - (clock() - quiet_since)
        if idle <= 0:
            message = f"no event for {settings.watch_idle_seconds:g} s; resume with Last-Event-ID"
            yield watch.ending("idle", message)
            return
        await watch.hub.wait_past(size, min(settings.watch_heartbeat_seconds, idle))
        if watch.hub.size <= size:
            yield b": heartbeat\n\n"


def page(watch: Watch, start: int, limit: int, size: int) -> dict[str, Any]:
    """Up to ``limit`` events from ``start`` (reading at most SCAN_MAX entries), as data."""
    index, gap = start_of(start, size, SCAN_MAX)
    gaps = [] if gap is None else [gap.as_data()]
    found: list[dict[str, Any]] = []
    end = min(size, index + SCAN_MAX)
    while index < end and len(found) < limit:
        chunk_end = min(end, index + READ_CHUNK)
        for item in watch.read(index, chunk_end):
            if isinstance(item, Gap):
                gaps.append(item.as_data())
                index = item.end
                continue
            index = item[0] + 1
            event = watch.selector.event(*item)
            if event is not None:
                found.append(event[0])
                if len(found) == limit:
                    break
    return {"status": "pass", "events": found, "gaps": gaps, "next": index, "treeSize": size}


def _filters(prefix: str | None, scope: str | None, holder: str | None) -> Filters:
    for field, value in (("prefix", prefix), ("scope", scope), ("holder", holder)):
        if value is not None and (not value or not value.isprintable()):
            high = 256 if field == "prefix" else NAME_LENGTH[1]
            rule = f"{field} must be 1..{high} printable characters"
            raise InputError("invalid_value", rule, field, status=400)
    return Filters(prefix, scope, holder)


def _tenant(request: Request) -> str:
    tenant = caller_tenant(request, None, None)
    if tenant == ANONYMOUS:
        raise InputError("anonymous_watch", ANONYMOUS_WATCH, status=403)
    return tenant


def _resume(request: Request, start: int | None, hub: WatchHub) -> int:
    """``Last-Event-ID`` + 1 (a reconnect), else ``from``, else the log's head."""
    last = header(request, "last-event-id")
    if last is None:
        return hub.size if start is None else start
    if not last.isdigit() or int(last) >= MAX_SAFE_INTEGER:
        rule = "Last-Event-ID must be the log index of an event (an integer ≥ 0)"
        raise InputError("invalid_value", rule, "Last-Event-ID", status=400)
    return int(last) + 1


def watch_routes(app: FastAPI, settings: Settings) -> None:
    def hub_of(request: Request) -> WatchHub:
        edge = edge_of(request)
        if edge.watch_hub is None:
            core = edge.core
            codec = NameCodec(load_or_create_names_key(core.config.keys_dir))
            read = open_tenant_names(core.config.database or core.config.data_dir, codec)
            edge.watch_hub = WatchHub(core.storage, settings, read)
        return edge.watch_hub

    @app.get("/api/v1/watch", include_in_schema=False)  # a stream: docs/api.md describes it
    async def watch(
        request: Request,
        start: Index = None,
        prefix: Prefix = None,
        scope: Name = None,
        holder: Name = None,
    ) -> Response:
        """The tenant's lease events as Server-Sent Events, from a log index on."""
        tenant, filters = _tenant(request), _filters(prefix, scope, holder)
        hub = hub_of(request)
        begin = _resume(request, start, hub)
        hub.enter(tenant)
        try:
            watching = Watch(request, hub, tenant, filters)
        except BaseException:
            hub.leave(tenant)
            raise
        stream = events(watching, begin, settings)
        return EventStream(stream, watching.ending, settings, lambda: hub.leave(tenant))

    @app.get(WATCH_EVENTS_PATH)
    async def watch_page(
        request: Request,
        start: Index = None,
        prefix: Prefix = None,
        scope: Name = None,
        holder: Name = None,
        limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 20,
    ) -> Response:
        """The tenant's lease events from a log index on, one signed page (`next` continues)."""
        tenant, filters = _tenant(request), _filters(prefix, scope, holder)
        hub = hub_of(request)
        size = edge_of(request).core.storage.tree_size()
        hub.observe(size)
        begin = size if start is None else start
        return respond(request, page(Watch(request, hub, tenant, filters), begin, limit, size), 200)
