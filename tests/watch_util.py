"""Helpers of the watch tests: a tenant of one's own, and a Server-Sent Events reader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from tests.conftest import Server

Event = tuple[str, int | None, dict[str, Any]]
"""(event type, id or None, the parsed data: the signed answer)."""


def namespace(server: Server) -> str:
    minted = httpx.post(server.url + "/api/v1/namespaces").json()["data"]["namespace"]
    assert isinstance(minted, str)
    return minted


def lease_call(server: Server, ns: str, op: str, **body: Any) -> dict[str, Any]:
    answer = httpx.post(
        f"{server.url}/api/v1/lease/{op}", json=body, headers={"Tenure-Namespace": ns}
    )
    assert answer.status_code in (200, 201), answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


def parse(lines: Iterator[str]) -> Iterator[Event]:
    """The events of an SSE body, comments skipped."""
    kind, ident, data = "message", None, ""
    for line in lines:
        if line == "":
            if data:
                yield kind, ident, json.loads(data)
            kind, ident, data = "message", None, ""
        elif line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("data: "):
            data += line[6:]


def watch(
    server: Server, ns: str, count: int, headers: dict[str, str] | None = None, **params: Any
) -> list[Event]:
    """The first ``count`` events of a watch (or fewer, if the stream ends first)."""
    sent = {"Tenure-Namespace": ns, **(headers or {})}
    found: list[Event] = []
    timeout = httpx.Timeout(30.0)
    with httpx.stream(
        "GET", server.url + "/api/v1/watch", params=params, headers=sent, timeout=timeout
    ) as got:
        assert got.status_code == 200, got.read()
        assert got.headers["content-type"].startswith("text/event-stream")
        events = parse(got.iter_lines())
        ready = next(events)
        assert ready[0] == "ready" and ready[1] is None  # where a reconnect starts over
        for event in events:
            found.append(event)
            if len(found) == count or event[0] == "end":
                break
    return found
