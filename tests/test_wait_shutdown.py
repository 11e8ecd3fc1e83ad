"""A server stopped by SIGINT while a `wait` is blocked answers it in the API's shape: 503
`status: unknown` (never a success), not uvicorn's plain-text 500; over a real socket."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from tests.conftest import Server, lease, rid


def _waiting(srv: Server, resource: str, out: list[httpx.Response]) -> threading.Thread:
    def wait() -> None:
        with srv.client() as api:
            out.append(lease(api, "wait", resource=resource, holder="b", waitSeconds=30))

    thread = threading.Thread(target=wait)
    thread.start()
    return thread


@pytest.mark.parametrize("args", [[], ["--workers", "1"]], ids=["workers", "in-process"])
def test_sigint_during_a_blocked_wait_answers_unknown(
    fresh_server: Server, args: list[str]
) -> None:
    fresh_server.args = args
    fresh_server.start()
    resource, out = rid(), []
    with fresh_server.client() as api:
        assert lease(api, "acquire", resource=resource, holder="a", ttlSeconds=600).is_success
    thread = _waiting(fresh_server, resource, out)
    time.sleep(1.0)  # the wait is blocked in the queue (the lease is held for 600 s)
    assert fresh_server.process is not None
    fresh_server.process.send_signal(signal.SIGINT)
    thread.join(30)
    fresh_server.process.wait(30)
    answer = out[0]
    assert answer.status_code == 503 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["data"]["status"] == "unknown" and "_provenance" in body
    log = fresh_server.log.read_text()
    assert '"POST /api/v1/lease/wait HTTP/1.1" 503' in log
    assert "Exception in ASGI application" not in log and "never retrieved" not in log
