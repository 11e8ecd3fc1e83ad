"""A log served over a real socket from a hand-made ledger (tests/test_audit.py's `Ledger`), or
a log that misbehaves the way an attacker's would: the monitor's HTTP edge is tested for real."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.test_audit import Ledger
from tests.test_monitor_rules import subproof

Route = Callable[[BaseHTTPRequestHandler, dict[str, int]], None]


def send_json(handler: BaseHTTPRequestHandler, data: Any) -> None:
    body = json.dumps(data).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def ledger_routes(ledger: Ledger) -> dict[str, Route]:
    """tenure's log API over ``ledger``, as a server would answer it."""
    leaves = ledger.leaves()

    def checkpoint(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
        send_json(h, ledger.checkpoint(leaves, len(leaves)))

    def entries(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
        span = range(q["start"], min(q["end"], q["start"] + 1000, len(leaves)))
        page = [{"index": i, "leaf": base64.b64encode(leaves[i]).decode()} for i in span]
        send_json(h, {"entries": page})

    def consistency(h: BaseHTTPRequestHandler, q: dict[str, int]) -> None:
        proof = subproof(q["first"], leaves[: q["second"]], True)
        send_json(h, {"hashes": [base64.b64encode(p).decode() for p in proof]})

    return {
        "/api/v1/log/checkpoint": checkpoint,
        "/api/v1/log/entries": entries,
        "/api/v1/log/proof/consistency": consistency,
    }


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[str]:
    """Serve ``routes`` on 127.0.0.1; yield the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: int(v[0]) for k, v in parse_qs(url.query).items()}
            route = routes.get(url.path)
            if route is None:
                self.send_error(404)
                return
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                route(self, query)  # a monitor that hangs up is what some tests want

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
