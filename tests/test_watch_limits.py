"""The bounds of GET /api/v1/watch on a real `tenure serve` (each test its own server, its limits
set by TENURE_WATCH_* variables): too many watches, the byte budget, the replay window said as a
gap, the idle end with heartbeats before it, and events written by another worker."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.conftest import Server
from tests.watch_util import Event, namespace, parse, watch


def _start(server: Server, monkeypatch: pytest.MonkeyPatch, workers: int = 1, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(f"TENURE_WATCH_{name.upper()}", value)
    server.args = ["--workers", str(workers)]
    server.start()


def _grants(server: Server, ns: str, count: int, prefix: str = "job") -> int:
    """``count`` grants on fresh connections; the log index of the first."""
    first = None
    for n in range(count):
        with httpx.Client(base_url=server.url, headers={"Connection": "close"}) as fresh:
            answer = fresh.post(
                "/api/v1/lease/acquire",
                json={"resource": f"{prefix}:{n}", "holder": "w"},
                headers={"Tenure-Namespace": ns},
            )
            assert answer.status_code == 201, answer.text
            first = answer.json()["data"]["ledger"]["logIndex"] if first is None else first
    assert first is not None
    return int(first)


def test_too_many_watches_is_a_signed_429(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start(fresh_server, monkeypatch, max="2")
    ns = namespace(fresh_server)
    headers = {"Tenure-Namespace": ns}
    url = fresh_server.url + "/api/v1/watch"
    with (
        httpx.stream("GET", url, headers=headers, timeout=30),
        httpx.stream("GET", url, headers=headers, timeout=30),
    ):
        refused = httpx.get(url, headers=headers)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"]
        error = refused.json()["data"]["error"]
        assert error["code"] == "too_many_watches"
        assert "already has 2 watches open" in error["message"]
        assert "_provenance" in refused.json()
        another = {"Tenure-Namespace": namespace(fresh_server)}
        with httpx.stream("GET", url, headers=another, timeout=30) as other:
            assert other.status_code == 200  # another tenant's count is its own
    deadline = time.monotonic() + 10  # the server counts a watch gone once it sees the close
    while time.monotonic() < deadline:
        with httpx.stream("GET", url, headers=headers, timeout=30) as again:
            if again.status_code == 200:
                return
    pytest.fail("the closed watches were never given back")


def test_the_byte_budget_ends_the_stream_with_an_event(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start(fresh_server, monkeypatch, budget_bytes="8192")
    ns = namespace(fresh_server)
    start = _grants(fresh_server, ns, 8)
    events = watch(fresh_server, ns, 20, **{"from": start})
    kinds = [kind for kind, _, _ in events]
    assert kinds[-1] == "end" and set(kinds[:-1]) == {"lease"} and 1 <= len(kinds) - 1 < 8
    assert events[-1][2]["data"]["reason"] == "byte_budget"
    resumed = watch(fresh_server, ns, 1, {"Last-Event-ID": str(events[-2][1])})
    assert resumed[0][1] == events[-2][1] + 1  # nothing lost: the next one resumes


def test_an_index_behind_the_replay_window_is_a_gap_then_idle_ends(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start(fresh_server, monkeypatch, replay_max="3", idle_seconds="1", heartbeat_seconds="0.2")
    ns = namespace(fresh_server)
    start = _grants(fresh_server, ns, 6)
    size = start + 6
    sent = {"Tenure-Namespace": ns}
    url = fresh_server.url + "/api/v1/watch"
    with httpx.stream("GET", url, params={"from": 0}, headers=sent, timeout=30) as got:
        lines = list(got.iter_lines())
    ready, *events = list(parse(iter(lines)))
    assert ready[0] == "ready" and ready[2]["data"]["from"] == 0
    gap = events[0]
    assert gap[0] == "gap" and gap[1] == size - 4
    assert gap[2]["data"] | {"message": ""} == {
        "from": 0,
        "to": size - 3,
        "reason": "beyond_replay",
        "message": "",
    }
    assert [ident for kind, ident, _ in events if kind == "lease"] == [size - 3, size - 2, size - 1]
    assert events[-1][0] == "end" and events[-1][2]["data"]["reason"] == "idle"
    assert ": heartbeat" in lines  # proxies saw traffic while the stream was quiet


def test_events_written_by_another_worker_reach_the_watcher(
    fresh_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch open on one process of a 2-worker server gets, as they happen, the grants of
    both its workers and of a second `tenure serve` on the same folder."""
    _start(fresh_server, monkeypatch, workers=2)
    second = Server(fresh_server.root, ["--workers", "1"]).start()
    try:
        ns = namespace(fresh_server)
        got: list[Event] = []
        head = {"from": _head(fresh_server, ns)}  # nothing is missed if the watch opens late
        reader = threading.Thread(target=lambda: got.extend(watch(fresh_server, ns, 24, **head)))
        reader.start()
        _grants(fresh_server, ns, 12, prefix="spread")
        _grants(second, ns, 12, prefix="other")
        reader.join(timeout=30)
        names = [f"spread:{n}" for n in range(12)] + [f"other:{n}" for n in range(12)]
        assert [data["data"]["resource"] for _, _, data in got] == names
    finally:
        second.stop()


def _head(server: Server, ns: str) -> int:
    page = httpx.get(server.url + "/api/v1/watch/events", headers={"Tenure-Namespace": ns})
    return int(page.json()["data"]["treeSize"])
