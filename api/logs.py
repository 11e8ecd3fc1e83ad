"""One access-log line per request, without secrets (DESIGN §2.14), and its buffered writer.

Bodies and headers are never logged. Paths are, and one path segment can be a capability: a
scope name, which in the anonymous tenant must be unguessable exactly because knowing it lets one
release the scope. The filter below replaces it before the line is formatted, in uvicorn's
access log and in tenure's own log (whose 500 lines name the path).
"""

from __future__ import annotations

import asyncio
import http
import logging
import re
import sys
from collections.abc import Callable, MutableMapping
from time import monotonic
from typing import Any, TextIO

_NEEDLE = "/scopes/"  # in every path the pattern below rewrites
_SCOPE = re.compile(r"(/api/v1/scopes/)[^/?\s\"]+")


def redact_path(text: str) -> str:
    if _NEEDLE not in text:  # most lines: a substring test instead of a regex
        return text
    return _SCOPE.sub(r"\1[scope]", text)


class RedactScopes(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, str) and _NEEDLE in a for a in args):
            record.args = tuple(redact_path(a) if isinstance(a, str) else a for a in args)
        if isinstance(record.msg, str):
            record.msg = redact_path(record.msg)
        return True


def install() -> None:
    for name in ("uvicorn.access", "uvicorn.error", "tenure"):
        logging.getLogger(name).addFilter(RedactScopes())


FLUSH_SECONDS = 0.1
_PHRASES = {int(status): f"{int(status)} {status.phrase}" for status in http.HTTPStatus}


class AccessLog:
    """uvicorn's access line (``INFO:     client - "METHOD path HTTP/v" 201 Created``, scope
    names redacted) for every request, written in batches.

    uvicorn logs each request through ``logging``: a LogRecord, a caller lookup, a formatter
    and a flush of stdout per line, ~45 µs of the loop thread per request even when hot. Here a
    line is one f-string appended to a buffer; the buffer is written at most every
    FLUSH_SECONDS by the loop, and at shutdown. A process killed with -9 loses at most that
    last tenth of a second of lines, never an answer.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def request(self, scope: MutableMapping[str, Any], status: int) -> None:
        """Log one answered request (an ASGI http scope and the status sent)."""
        client = scope.get("client")
        who = f"{client[0]}:{client[1]}" if client else "-"
        path = scope.get("path", "")
        query = scope.get("query_string")
        if query:
            path = f"{path}?{query.decode('ascii', 'replace')}"
        version = scope.get("http_version", "1.1")
        phrase = _PHRASES.get(status) or str(status)
        request = f"{scope.get('method')} {redact_path(path)} HTTP/{version}"
        self._lines.append(f'INFO:     {who} - "{request}" {phrase}\n')
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write what is buffered (the loop calls this; so does shutdown)."""
        self._timer = None
        if not self._lines:
            return
        text, self._lines = "".join(self._lines), []
        stream = self._stream or sys.stdout
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stdout: the lines are dropped
            pass


class Repeating:
    """A warning a failing backend may cause on every request: each new cause is logged at
    once, the same cause again at most once per ``every`` seconds, saying how many were not."""

    def __init__(
        self, logger: logging.Logger, every: float = 10.0, clock: Callable[[], float] = monotonic
    ) -> None:
        self._logger, self._every, self._clock = logger, every, clock
        self._cause: str | None = None
        self._logged_at = 0.0
        self._skipped = 0

    def warning(self, what: str, cause: str) -> None:
        """Log ``what: cause`` unless the same cause was logged less than ``every`` s ago."""
        now = self._clock()
        if cause == self._cause and now - self._logged_at < self._every:
            self._skipped += 1
            return
        skipped = ""
        if self._skipped:
            which = "since" if cause == self._cause else "of the cause before"
            skipped = f" ({self._skipped} more {which}, not logged)"
        self._logger.warning("%s: %s%s", what, cause, skipped)
        self._cause, self._logged_at, self._skipped = cause, now, 0
