"""`POST /api/v1/verify-provenance` off the event loop (issue 8 item 1).

Verification is CPU work whose cost depends on the document (RDF canonicalization has poison
inputs), so it never runs on the event loop: it runs on a small pool of worker threads, at most
`limit` at a time (more are refused with 429 at once rather than queued), and an answer is
given after `budget` seconds whatever the worker is still doing. A worker that overruns keeps
its slot until it ends, so a run of poison documents exhausts the verify slots, never the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from api.requests import RetryAfter
from api.schemas import InputError
from verify.bundle import verify_document
from verify.receipt import Check, Report


class BoundedVerifier:
    def __init__(self, limit: int, budget: float) -> None:
        self.limit, self.budget = limit, budget
        self._busy = 0
        self._pool = ThreadPoolExecutor(limit, thread_name_prefix="tenure-verify")

    async def verify(self, document: Any, trusted: Collection[str], entry: bytes | None) -> Report:
        """The verifier's report, or a failed `budget` check if it ran out of time."""
        if self._busy >= self.limit:
            busy = InputError("busy", f"all {self.limit} verification slots are in use", status=429)
            raise busy from RetryAfter(self.budget)
        self._busy += 1
        work = asyncio.get_running_loop().run_in_executor(
            self._pool, _verify, document, trusted, entry
        )
        work.add_done_callback(self._release)
        try:
            return await asyncio.wait_for(asyncio.shield(work), self.budget)
        except TimeoutError:
            detail = f"verification stopped after {self.budget:g} s: the document is too costly"
            return Report([Check("budget", False, detail)])

    def _release(self, _: object) -> None:
        self._busy -= 1


def _verify(document: Any, trusted: Collection[str], entry: bytes | None) -> Report:
    try:
        return verify_document(document, trusted, entry=entry)
    except RecursionError:
        return Report([Check("format", False, "the document nests too deeply to verify")])
