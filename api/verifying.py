"""`POST /api/v1/verify-provenance` off the event loop.

Verification is CPU work whose cost depends on the document (RDF canonicalization has poison
inputs), so it runs in a worker thread, at most `limit` at a time (more are refused with 429 at
once rather than queued), and an answer is given after `budget` seconds whatever the worker is
still doing. A worker that overruns keeps its slot until it ends, so poison documents exhaust the
verify slots, never the loop. Workers are daemon threads: one still running never holds up a
shutdown. A thread suffices; a process would add its start-up to every verify (figures in
docs/performance.md, "Offline verification").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Collection
from typing import Any

from api.requests import RetryAfter
from api.schemas import InputError
from verify.bundle import verify_document
from verify.receipt import Check, Report


class BoundedVerifier:
    def __init__(self, limit: int, budget: float) -> None:
        self.limit, self.budget = limit, budget
        self._busy = 0

    async def verify(self, document: Any, trusted: Collection[str], entry: bytes | None) -> Report:
        """The verifier's report, or a failed `budget` check if it ran out of time."""
        if self._busy >= self.limit:
            busy = InputError("busy", f"all {self.limit} verification slots are in use", status=429)
            raise busy from RetryAfter(self.budget)
        self._busy += 1
        work = _in_daemon_thread(document, trusted, entry)
        work.add_done_callback(self._release)
        try:
            return await asyncio.wait_for(asyncio.shield(work), self.budget)
        except TimeoutError:
            detail = f"verification stopped after {self.budget:g} s: the document is too costly"
            return Report([Check("budget", False, detail)])

    def _release(self, _: object) -> None:
        self._busy -= 1


def _in_daemon_thread(
    document: Any, trusted: Collection[str], entry: bytes | None
) -> asyncio.Future[Report]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Report] = loop.create_future()

    def run() -> None:
        report = _verify(document, trusted, entry)
        loop.call_soon_threadsafe(_settle, future, report)

    threading.Thread(target=run, name="tenure-verify", daemon=True).start()
    return future


def _settle(future: asyncio.Future[Report], report: Report) -> None:
    if not future.done():
        future.set_result(report)


def _verify(document: Any, trusted: Collection[str], entry: bytes | None) -> Report:
    try:
        return verify_document(document, trusted, entry=entry)
    except RecursionError:
        return Report([Check("format", False, "the document nests too deeply to verify")])
    except Exception as error:  # a verifier bug is a failed check here, never a lost slot
        return Report([Check("verifier", False, f"the verifier failed: {type(error).__name__}")])
