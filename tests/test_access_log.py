"""The access log (api/logs.py): scope names hidden, lines buffered off the request path."""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path

import httpx
import pytest

from api.logs import FLUSH_SECONDS, AccessLog, RedactScopes, Repeating
from tests.conftest import Server, rid

LINE = '%s - "%s %s HTTP/%s" %d'


def record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.access", logging.INFO, "x", 1, msg, args, None)


def test_a_scope_name_in_the_path_is_replaced() -> None:
    line = record(LINE, "127.0.0.1:1", "POST", "/api/v1/scopes/s3cret/release", "1.1", 200)
    RedactScopes().filter(line)
    assert (
        "s3cret" not in line.getMessage() and "/api/v1/scopes/[scope]/release" in line.getMessage()
    )
    message = record("unhandled error on /api/v1/scopes/s3cret/x")
    RedactScopes().filter(message)
    assert message.getMessage() == "unhandled error on /api/v1/scopes/[scope]/x"


def test_a_line_without_a_scope_is_left_as_it_was() -> None:
    args = ("127.0.0.1:1", "POST", "/api/v1/lease/acquire", "1.1", 201)
    line = record(LINE, *args)
    RedactScopes().filter(line)
    assert line.args is not None and line.args == args


def test_access_lines_are_buffered_and_written_by_the_loop() -> None:
    """AccessLog writes nothing per request: the loop writes the batch FLUSH_SECONDS later
    (the loop's clock is fixed and moved by hand)."""
    stream = io.StringIO()
    log = AccessLog(stream)
    scope = {"client": ("10.0.0.1", 5), "method": "POST", "http_version": "1.1"}
    loop = asyncio.new_event_loop()
    now = [1000.0]
    loop.time = lambda: now[0]  # type: ignore[method-assign]

    async def turns() -> str:
        for _ in range(3):
            await asyncio.sleep(0)  # a few turns of the loop: due timers run, others wait
        return stream.getvalue()

    async def scenario() -> tuple[str, str, str]:
        for n in range(3):
            log.request({**scope, "path": f"/api/v1/scopes/s3cret{n}/release"}, 200)
        at_once = stream.getvalue()
        now[0] += FLUSH_SECONDS * 0.9
        before = await turns()
        now[0] += FLUSH_SECONDS * 0.2
        return at_once, before, await turns()

    try:
        at_once, before, text = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert at_once == "" and before == ""
    assert text.count('INFO:     10.0.0.1:5 - "POST /api/v1/scopes/[scope]/release HTTP/1.1"') == 3
    assert text.endswith(" 200 OK\n") and "s3cret" not in text


def test_a_default_server_logs_each_request_once_without_scope_names(
    tmp_path: Path,
) -> None:
    """`tenure serve` at its default level logs one uvicorn-style line per request, written by
    the app (uvicorn's own access log is off), scope names redacted, flushed at shutdown."""
    server = Server(tmp_path, ["--workers", "1"]).start()
    scope = rid("scope")
    try:
        body = {"resource": rid("log"), "holder": "h", "ttlSeconds": 30, "scope": scope}
        assert httpx.post(server.url + "/api/v1/lease/acquire", json=body).status_code == 201
        httpx.post(server.url + f"/api/v1/scopes/{scope}/release", json={})
    finally:
        server.stop()
    log = server.log.read_text()
    assert log.count('"POST /api/v1/lease/acquire HTTP/1.1" 201 Created') == 1
    assert '"POST /api/v1/scopes/[scope]/release HTTP/1.1"' in log
    assert scope not in log


def test_an_outage_logs_each_cause_once_per_interval_with_what_it_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    logger = logging.getLogger("tenure.test_outage")
    logger.addFilter(RedactScopes())
    outage = Repeating(logger, every=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="tenure.test_outage"):
        outage.warning("storage unavailable on POST /api/v1/lease/acquire", "pool timeout")
        for _ in range(3):
            now[0] += 3.0  # 9 s in all: within the interval
            outage.warning("storage unavailable on POST /api/v1/lease/renew", "pool timeout")
        outage.warning("storage unavailable on POST /api/v1/scopes/s3cret/release", "disk full")
        now[0] += 10.0
        outage.warning("storage unavailable on GET /api/v1/log/entries", "disk full")
    assert [r.getMessage() for r in caplog.records] == [
        "storage unavailable on POST /api/v1/lease/acquire: pool timeout",
        "storage unavailable on POST /api/v1/scopes/[scope]/release: disk full"
        " (3 more of the cause before, not logged)",  # a new cause: at once
        "storage unavailable on GET /api/v1/log/entries: disk full",  # 10 s on, none left out
    ]
    outage.warning("storage unavailable on GET /healthz", "disk full")  # within 10 s: left out
    now[0] += 10.0
    with caplog.at_level(logging.WARNING, logger="tenure.test_outage"):
        caplog.clear()
        outage.warning("storage unavailable on GET /readyz", "disk full")
    assert [r.getMessage() for r in caplog.records] == [
        "storage unavailable on GET /readyz: disk full (1 more since, not logged)"
    ]
