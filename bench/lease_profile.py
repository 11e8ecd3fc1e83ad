"""Server CPU per lease event, in process: the app driven through raw ASGI calls, no sockets.

Not a test: prints figures. Runs ``create_app`` with throw-away data and keys and drives N
interleaved acquire→release cycles (or, with ``--fresh``, ``bench/vs_etcd.py``'s fresh acquires)
straight into the ASGI app, so the figure is the app's own Python per event, without the HTTP
server or a client. Prints the process's CPU, the event loop's and the writer's; the profile is
timed by ``thread_time`` so a shared machine does not inflate it. Method: docs/performance.md.

    .venv/bin/python bench/lease_profile.py [--events 4000] [--concurrency 64] [--fresh]
                                            [--profile out.prof] [--python-answers]
    .venv/bin/python -m pstats out.prof   # then: sort cumulative / stats 40
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api.app import create_app  # noqa: E402
from api.settings import Settings  # noqa: E402
from ledger.lease.tokens import API_KEY_PREFIX, mint, secret_digest  # noqa: E402
from ledger.storage import ApiKeyRecord  # noqa: E402

AUTHORIZATION: list[tuple[bytes, bytes]] = []
"""The ``Authorization`` header ``--fresh`` adds (an API key of tenant ``bench``)."""


async def call(app: Any, path: str, body: bytes) -> tuple[int, bytes]:
    """One POST through the ASGI interface, as uvicorn would make it."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *AUTHORIZATION,
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    sent = False
    status, chunks = 0, []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


async def cycles(app: Any, count: int) -> None:
    resource = f"bench-{secrets.token_hex(16)}"
    acquire = json.dumps({"resource": resource, "holder": "h", "ttlSeconds": 30}).encode()
    for _ in range(count):
        status, payload = await call(app, "/api/v1/lease/acquire", acquire)
        assert status == 201, payload
        owner = json.loads(payload)["data"]["ownerToken"]
        release = json.dumps({"resource": resource, "ownerToken": owner}).encode()
        status, payload = await call(app, "/api/v1/lease/release", release)
        assert status == 200, payload


async def fresh(app: Any, count: int) -> None:
    """``count`` acquires, each of a resource nobody named before (no release)."""
    bodies = [
        json.dumps({"resource": f"job-{secrets.token_hex(8)}", "holder": "worker-1"}).encode()
        for _ in range(count)
    ]
    for body in bodies:
        status, payload = await call(app, "/api/v1/lease/acquire", body)
        assert status == 201, payload


def api_key(app: Any) -> None:
    """Record an API key for tenant ``bench`` and send it with every call."""
    key = mint(API_KEY_PREFIX)
    record = ApiKeyRecord(secret_digest(key), "bench", "bench", int(time.time() * 1000))
    app.state.edge.core.storage.add_api_key(record)
    AUTHORIZATION[:] = [(b"authorization", b"Bearer " + key.encode())]


async def drive(events: int, concurrency: int, profile: str | None, new: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="tenure-profile-") as scratch:
        settings = Settings(
            data_dir=Path(scratch) / "data", keys_dir=Path(scratch) / "keys", rate_limit=1e9
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            if new:
                api_key(app)
            work, per_event = (fresh, 1) if new else (cycles, 2)
            await asyncio.gather(*(work(app, 5) for _ in range(concurrency)))  # warm-up
            per_task = max(1, events // (per_event * concurrency))
            profiler = cProfile.Profile(time.thread_time) if profile else None
            cpu0, loop0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            await asyncio.gather(*(work(app, per_task) for _ in range(concurrency)))
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)  # type: ignore[arg-type]
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            loop = time.thread_time() - loop0
            done = per_event * per_task * concurrency
            print(
                f"events={done} concurrency={concurrency} wall={wall:.2f}s "
                f"events/s={done / wall:.0f} CPU per event={cpu / done * 1e6:.0f} µs "
                f"(event-loop thread {loop / done * 1e6:.0f} µs, "
                f"writer and other threads {(cpu - loop) / done * 1e6:.0f} µs)"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--profile", help="write a cProfile of the measured part here")
    parser.add_argument(
        "--fresh", action="store_true", help="acquire new resources under an API key, no release"
    )
    parser.add_argument(
        "--python-answers",
        action="store_true",
        help="answers written by the Python path, not ledger._native (for A/B counts)",
    )
    args = parser.parse_args()
    if args.python_answers:
        from ledger.lease import provenance

        provenance.HAVE_NATIVE = False
    asyncio.run(drive(args.events, args.concurrency, args.profile, args.fresh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
