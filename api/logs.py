"""One access-log line per request, without secrets (DESIGN §2.14).

Bodies and headers are never logged. Paths are, and one path segment can be a capability: a
scope name, which in the anonymous tenant must be unguessable exactly because knowing it lets one
release the scope. The filter below replaces it before the line is formatted, in uvicorn's
access log and in tenure's own log (whose 500 lines name the path).
"""

from __future__ import annotations

import logging
import re

_NEEDLE = "/scopes/"  # in every path the pattern below rewrites
_SCOPE = re.compile(r"(/api/v1/scopes/)[^/?\s\"]+")


def redact_path(text: str) -> str:
    if _NEEDLE not in text:  # most lines: a substring test instead of a regex (issue 10)
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
