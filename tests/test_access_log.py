"""The access-log filter (api/logs.py) still hides scope names after its fast path (issue 10)."""

from __future__ import annotations

import logging

from api.logs import RedactScopes

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
