"""The monitor's HTTP reads of a log, bounded: a hostile log can neither hang nor bloat it.

Each GET has one deadline for the whole answer (not per read, so an answer trickled a byte at a
time still ends), no later than the round's own deadline; its body is read as a stream and
refused past ``MAX_BODY`` bytes, before any of it is parsed.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from verify import ijson
from verify.errors import MalformedInput
from verify.monitor import Monitor
from verify.monitor_state import Finding, Seen

if TYPE_CHECKING:
    import httpx

MAX_BODY = 8 << 20
"""Bytes of one answer: a page of 1000 entries is a few hundred KiB."""


class Unavailable(Exception):
    """The log did not answer, or not in its protocol's shape (retried unless --once)."""


class Log:
    """GET a log endpoint as JSON; any failure, late or oversized answer is :class:`Unavailable`."""

    def __init__(
        self, client: httpx.Client, request_timeout: float, max_body: int = MAX_BODY
    ) -> None:
        self.client, self.request_timeout, self.max_body = client, request_timeout, max_body
        self.round_end = math.inf
        self.round_timeout = math.inf

    def start_round(self, seconds: float) -> None:
        """Every GET from now on ends by ``seconds`` from now."""
        self.round_timeout, self.round_end = seconds, time.monotonic() + seconds

    def get(self, path: str, **params: int) -> Any:
        import httpx

        now = time.monotonic()
        end = min(now + self.request_timeout, self.round_end)
        if end <= now:
            raise Unavailable(f"GET {path}: {self._late(end)}")
        try:
            with self.client.stream("GET", path, params=params, timeout=end - now) as answer:
                if answer.status_code != 200:
                    raise Unavailable(f"GET {path}: HTTP {answer.status_code}")
                body = self._body(answer, path, end)
        except httpx.HTTPError as e:
            late = time.monotonic() >= end
            raise Unavailable(f"GET {path}: {self._late(end) if late else e}") from e
        try:
            return ijson.loads(body, f"GET {path}")  # as strict as verify-provenance
        except MalformedInput as e:
            raise Unavailable(str(e)) from e

    def _body(self, answer: httpx.Response, path: str, end: float) -> bytes:
        declared = answer.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise Unavailable(f"GET {path}: an answer of {declared} bytes, over {self._cap()}")
        body = bytearray()
        for chunk in answer.iter_bytes():  # decoded: a compressed bomb is counted as it grows
            body += chunk
            if len(body) > self.max_body:
                raise Unavailable(f"GET {path}: the answer grew over {self._cap()}")
            if time.monotonic() >= end:
                raise Unavailable(f"GET {path}: {self._late(end)}")
        return bytes(body)

    def _late(self, end: float) -> str:
        if end >= self.round_end:
            return f"the round's deadline passed (--round-timeout {self.round_timeout:g} s)"
        return f"no complete answer within --request-timeout {self.request_timeout:g} s"

    def _cap(self) -> str:
        return f"the {self.max_body} bytes a monitor reads"


def advance(
    monitor: Monitor, log: Log, note: Seen | None = None
) -> tuple[Seen, list[Finding], int]:
    """One round to ``note`` (by default the log's latest checkpoint): its consistency with the
    last one seen, its new entries checked against the lease rules, sealed. Returns the new
    checkpoint, the findings, and how many entries were added."""
    new = monitor.checkpoint(
        log.get("/api/v1/log/checkpoint") if note is None else {"note": note.note}
    )
    seen = monitor.state.seen
    if seen is not None and monitor.needs_consistency(new):
        proof = log.get("/api/v1/log/proof/consistency", first=seen.size, second=new.size)
        monitor.consistency(new, proof)
    start = monitor.size
    while monitor.size < new.size:
        monitor.entries(new, log.get("/api/v1/log/entries", start=monitor.size, end=new.size))
    return new, monitor.seal(new), new.size - start
