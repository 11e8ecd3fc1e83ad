"""How every answer is written: `{"data": ...}` envelopes for lease, namespace and scope
endpoints (DESIGN §3.3), plain JSON for the log endpoints (§3.4)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import Response

from api.schemas import InputError

JSON = "application/json"


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def raw(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status, media_type=JSON)


def respond(data: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps({"data": data}), status, headers, media_type=JSON)


def error_response(error: InputError, headers: dict[str, str] | None = None) -> Response:
    return respond({"status": "fail", "error": error.as_data()}, error.status, headers)


def unknown_response(message: str, status: int = 503) -> Response:
    error = {"code": "storage_unavailable", "message": message}
    return respond({"status": "unknown", "error": error}, status, {"Retry-After": "1"})
