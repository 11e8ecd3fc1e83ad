"""``client.watch`` against a real `tenure serve`: typed events, each receipt checked; resumed with
Last-Event-ID after a dropped connection and after a stream the server ended; the docs' example."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from api.client import Client
from api.client.watching import WatchEvent
from tests.conftest import ROOT, Server


class DropsFirstWatch(httpx.HTTPTransport):
    """Cuts the first watch's connection after its first event; records each watch's headers."""

    def __init__(self) -> None:
        super().__init__()
        self.watches: list[httpx.Headers] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path != "/api/v1/watch":
            return response
        self.watches.append(request.headers)
        if len(self.watches) == 1:
            response.stream = _cut(response.stream)  # type: ignore[arg-type]
        return response


class _cut(httpx.SyncByteStream):
    """The stream, dropped once the first ``after`` event has been read (``then`` runs first)."""

    def __init__(
        self, stream: Any, after: bytes = b"event: lease", then: Callable[[], object] = list
    ) -> None:
        self._stream, self._after, self._then = stream, after, then

    def __iter__(self) -> Iterator[bytes]:
        seen = b""
        for chunk in self._stream:
            seen += chunk
            yield chunk
            if self._after in seen and b"\n\n" in seen.split(self._after, 1)[1]:
                self._then()
                raise httpx.ReadError("connection dropped (test)")

    def close(self) -> None:
        self._stream.close()


class DropsAfterReady(httpx.HTTPTransport):
    """Cuts the first watch right after its ``ready`` event, granting ``first`` meanwhile (an
    event while the client is away); grants ``then`` once the second watch is open."""

    def __init__(self, grant: Callable[[str], object]) -> None:
        super().__init__()
        self.grant, self.watches = grant, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path == "/api/v1/watch":
            self.watches += 1
            if self.watches == 1:
                response.stream = _cut(
                    response.stream, b"event: ready", lambda: self.grant("first")
                )  # type: ignore[arg-type]
            else:
                self.grant("then")
        return response


def _ops(client: Client, start: int | None, count: int, **filters: str) -> list[WatchEvent]:
    found: list[WatchEvent] = []
    for event in client.watch(from_index=start, **filters):
        assert isinstance(event, WatchEvent)
        found.append(event)
        if len(found) == count:
            break
    return found


def test_a_dropped_connection_resumes_with_last_event_id(server: Server) -> None:
    transport = DropsFirstWatch()
    with Client(server.url) as setup:
        ns = setup.create_namespace().namespace
    with Client(server.url, namespace=ns, transport=transport) as client:
        grant = client.acquire("deploy:a", "w1")
        client.renew("deploy:a", grant.owner_token or "")
        client.release("deploy:a", grant.owner_token or "")
        start = grant.ledger["logIndex"]
        events = _ops(client, start, 3, prefix="deploy:")
    assert [(e.op, e.index, e.resource) for e in events] == [
        ("grant", start, "deploy:a"),
        ("renew", start + 1, "deploy:a"),
        ("release", start + 2, "deploy:a"),
    ]
    assert events[0].fencing_token == grant.fencing_token
    assert "last-event-id" not in transport.watches[0]
    assert transport.watches[1]["last-event-id"] == str(start)  # after the one it had


def test_a_watch_from_now_dropped_before_any_event_misses_nothing(server: Server) -> None:
    with Client(server.url) as setup:
        ns = setup.create_namespace().namespace
    with Client(server.url, namespace=ns) as granter:
        transport = DropsAfterReady(lambda name: granter.acquire(name, "w"))
        with Client(server.url, namespace=ns, transport=transport) as client:
            events = _ops(client, None, 2)
    assert [e.resource for e in events] == ["first", "then"]


def test_a_stream_ended_by_its_budget_resumes(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_WATCH_BUDGET_BYTES", "8192")  # two or three events a stream
    fresh_server.start()
    with Client(fresh_server.url) as setup:
        ns = setup.create_namespace().namespace
    with Client(fresh_server.url, namespace=ns) as client:
        first = client.acquire("job:0", "w").ledger["logIndex"]
        for n in range(1, 10):
            client.acquire(f"job:{n}", "w")
        events = _ops(client, first, 10)
    assert [e.resource for e in events] == [f"job:{n}" for n in range(10)]
    assert [e.index for e in events] == list(range(first, first + 10))


def test_the_documented_example_runs(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "client.md").read_text()
    start = text.index("```python\n", text.index("### Watching lease events")) + len("```python\n")
    example = text[start : text.index("\n```", start)]
    with Client(server.url) as client:
        namespace = client.create_namespace().namespace
    scope: dict[str, Any] = {"URL": server.url, "NAMESPACE": namespace}
    exec(example, scope)
    scope["client"].close()
    printed = capsys.readouterr().out.split()
    assert printed[:3] == ["grant", "deploy:web", "1"]
