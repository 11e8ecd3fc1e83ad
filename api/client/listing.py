"""``Client.list_leases``: one page of the caller's live leases (``GET /api/v1/leases``), and
the pages one after another, each answer's receipt checked like every answer's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from api.client.answers import Answer
from api.client.core import Call, Core, Request, canonical_request

PATH = "/api/v1/leases"
ECHOED = ("prefix", "scope", "holder", "cursor")
"""What the answer repeats of the query: a page for another query is not believed."""


@dataclass(frozen=True, slots=True)
class LeaseList(Answer):
    """One page: ``leases`` (resource, capacity, holders; for capacity 1 the holder's
    ``holder``, ``fencingToken``, ``expiresAt`` too) and ``next``, the cursor of the next page."""

    @property
    def leases(self) -> list[dict[str, Any]]:
        return list(self.data.get("leases") or [])

    @property
    def next(self) -> str | None:
        cursor = self.data.get("next")
        return None if cursor is None else str(cursor)


def list_call(
    core: Core,
    prefix: str | None = None,
    *,
    scope: str | None = None,
    holder: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[LeaseList]:
    """The call of one page; the receipt hashes the path without its query, and the answer
    must repeat the filters and cursor asked."""
    query = {"prefix": prefix, "scope": scope, "holder": holder, "limit": limit, "cursor": cursor}
    sent = {name: value for name, value in query.items() if value is not None}
    path = PATH + ("?" + urlencode(sent) if sent else "")
    expect = tuple((name, str(sent[name])) for name in ECHOED if name in sent)
    canonical = canonical_request("GET", PATH, None)
    return Call(Request("GET", path, None, core.timeout), LeaseList, True, canonical, expect)


def pages(fetch: Callable[[str | None], LeaseList]) -> Iterator[LeaseList]:
    """``fetch(cursor)`` from the first page to the last, following each ``next``."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield page
        if page.next is None:
            return
        cursor = page.next


async def async_pages(
    fetch: Callable[[str | None], Awaitable[LeaseList]],
) -> AsyncIterator[LeaseList]:
    """:func:`pages` for ``AsyncClient``."""
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        yield page
        if page.next is None:
            return
        cursor = page.next
