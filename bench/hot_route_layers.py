"""The cost of the layers in front of the lease handler, alone: the handler replaced by one that
returns a fixed answer, the app called through ASGI 20,000 times a round, CPU µs per request.

Not a test: prints figures (min and median of 7 rounds). ``TENURE_ACCEL`` applies, so
``TENURE_ACCEL=none`` shows what FastAPI's own routing costs the same request.

    .venv/bin/python bench/hot_route_layers.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.responses import Response

from api import lease_routes

ROUNDS, REQUESTS = 7, 20_000
SCOPE: dict[str, Any] = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/api/v1/lease/acquire",
    "raw_path": b"/api/v1/lease/acquire",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"host", b"127.0.0.1")],
    "client": ("127.0.0.1", 1),
    "server": ("127.0.0.1", 80),
}


async def fixed(request: Any, settings: Any, op: str | None) -> Response:
    return Response(b'{"data":{}}', 201, media_type="application/json")


async def measure() -> list[float]:
    from api.app import create_app
    from api.settings import Settings

    root = Path(tempfile.mkdtemp())
    app = create_app(Settings(data_dir=root / "data", keys_dir=root / "keys"))

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Any) -> None:
        pass

    rounds = []
    for _ in range(ROUNDS):
        began = time.process_time()
        for _ in range(REQUESTS):
            await app(dict(SCOPE), receive, send)
        rounds.append((time.process_time() - began) / REQUESTS * 1e6)
    return sorted(rounds)


def main() -> int:
    lease_routes.lease_answer = fixed  # type: ignore[assignment]
    rounds = asyncio.run(measure())
    print(f"µs per request: min {rounds[0]:.2f}, median {rounds[len(rounds) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
