"""One access-log line per request, without secrets (DESIGN §2.14).

Bodies and headers are never logged. Paths are, and one path segment can be a capability: a
scope name, which in the anonymous tenant must be unguessable exactly because knowing it lets one
release the scope. The filter below replaces it before uvicorn formats the line.
"""

from __future__ import annotations

import logging
import re

_SCOPE = re.compile(r"^(/api/v1/scopes/)[^/?]+")


class RedactScopes(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path = _SCOPE.sub(r"\1[scope]", args[2])
            record.args = (*args[:2], path, *args[3:])
        return True


def install() -> None:
    logging.getLogger("uvicorn.access").addFilter(RedactScopes())
