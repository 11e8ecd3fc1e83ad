"""`tenure serve --witness URL=VKEY`: the log's checkpoints, cosigned by its witnesses.

Before a checkpoint is served (``GET /checkpoint``, ``/api/v1/log/checkpoint``, a bundle on the
latest one), it is pushed to each witness not yet holding it (c2sp.org/tlog-witness
``add-checkpoint``, with the consistency proof from the size that witness last cosigned), and
served with the cosignature lines that verify under the witness's key appended to the note.
A witness's 409 names its size; the push is retried once from it. A witness that is down,
slow (``TIMEOUT``) or refuses is logged and left out, and asked again ``RETRY`` seconds later:
the checkpoint is served with the cosignatures it has. Each worker process pushes on its own;
a witness answers a checkpoint it already cosigned with a new cosignature."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from verify.cosignature import verify_cosignature
from verify.errors import MalformedInput, VerificationError
from verify.note import SIG_PREFIX
from verify.witnesses import WitnessKey, parse_witness_vkey

if TYPE_CHECKING:
    import httpx
    from fastapi import Request

    from api.requests import EdgeState
    from ledger.log.view import LogReader, SignedCheckpoint

TIMEOUT, RETRY = 5.0, 10.0
SIZE_TYPE = "text/x.tlog.size"
logger = logging.getLogger("tenure.witness")


@dataclass(frozen=True)
class Target:
    url: str
    key: WitnessKey


def parse_target(text: str) -> Target:
    """``URL=VKEY`` of ``--witness`` (ValueError saying what is wrong)."""
    url, sep, vkey = text.partition("=")
    if not sep or not url.startswith(("http://", "https://")):
        raise ValueError(f"--witness takes URL=VKEY with an http(s) URL, not {text!r}")
    try:
        return Target(url.rstrip("/"), parse_witness_vkey(vkey))
    except MalformedInput as e:
        raise ValueError(f"--witness {url}: {e}") from e


@dataclass
class Held:
    """What one witness gave for the latest checkpoint pushed to it."""

    size: int = 0
    """The size this witness last cosigned, as it said."""
    root: bytes = b""
    line: str = ""
    """The cosignature line for the checkpoint of ``size`` and ``root``."""
    tried_for: tuple[int, bytes] = (-1, b"")
    tried: float = float("-inf")


class Pusher:
    def __init__(
        self,
        targets: Sequence[Target],
        client: httpx.AsyncClient,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.targets, self.client, self.clock = list(targets), client, clock
        self.held = {t.url: Held() for t in self.targets}
        self.lock = asyncio.Lock()

    async def witnessed(self, signed: SignedCheckpoint, log: LogReader) -> SignedCheckpoint:
        """``signed`` with the cosignatures of its witnesses appended to its note."""
        async with self.lock:
            due = [t for t in self.targets if self._due(t, signed)]
            await asyncio.gather(*(self._push(t, signed, log) for t in due))
        lines = [self._line(t, signed) for t in self.targets]
        return replace(signed, note=signed.note + "".join(lines))

    def _line(self, target: Target, signed: SignedCheckpoint) -> str:
        held = self.held[target.url]
        return held.line if (held.size, held.root) == (signed.tree_size, signed.root_hash) else ""

    def _due(self, target: Target, signed: SignedCheckpoint) -> bool:
        """Not cosigned yet, and not tried for this checkpoint or not for ``RETRY`` seconds."""
        held = self.held[target.url]
        if self._line(target, signed):
            return False
        fresh = held.tried_for != (signed.tree_size, signed.root_hash)
        return fresh or self.clock() - held.tried >= RETRY

    async def _push(self, target: Target, signed: SignedCheckpoint, log: LogReader) -> None:
        held = self.held[target.url]
        held.tried, held.tried_for = self.clock(), (signed.tree_size, signed.root_hash)
        for _ in range(2):
            if held.size > signed.tree_size:
                return _warn(target, f"it cosigned size {held.size}, past {signed.tree_size}")
            body = add_checkpoint_body(held.size, signed, log)
            try:
                answer = await self.client.post(f"{target.url}/add-checkpoint", content=body)
            except Exception as e:  # any transport failure leaves this witness out, for now
                return _warn(target, f"unreachable: {e!r}")
            if answer.status_code == 409 and answer.headers.get("content-type") == SIZE_TYPE:
                held.size = _size(answer.text)
                continue
            if answer.status_code != 200:
                return _warn(target, f"{answer.status_code}: {answer.text.strip()[:200]}")
            line = _own_line(target, signed.note, answer.text)
            if line:
                held.size, held.root, held.line = signed.tree_size, signed.root_hash, line
            return None
        return None


def add_checkpoint_body(old: int, signed: SignedCheckpoint, log: LogReader) -> bytes:
    """``old N``, the consistency proof from N, a blank line and the note (tlog-witness)."""
    proof = log.consistency(old, signed.tree_size)["hashes"] if old > 0 else []
    lines = "".join(f"{h}\n" for h in proof)
    return f"old {old}\n{lines}\n{signed.note}".encode()


def _own_line(target: Target, note: str, answer: str) -> str:
    """The answer's cosignature line by this witness, once it verifies over ``note``."""
    prefix = f"{SIG_PREFIX}{target.key.name} "
    mine = [line + "\n" for line in answer.split("\n") if line.startswith(prefix)]
    for line in mine:
        try:
            verify_cosignature(note + line, target.key.name, target.key.public)
            return line
        except VerificationError:
            continue
    _warn(target, "its answer holds no cosignature that verifies under its key")
    return ""


def _size(text: str) -> int:
    stripped = text.strip()
    return int(stripped) if stripped.isdigit() else 0


def _warn(target: Target, message: str) -> None:
    logger.warning("witness %s: %s", target.url, message)


async def served_checkpoint(request: Request) -> SignedCheckpoint:
    """The latest checkpoint, with its witnesses' cosignatures when the server has witnesses."""
    from api.requests import edge_of

    edge = edge_of(request)
    signed = await edge.core.checkpoint_covering()
    pusher = edge.witnesses
    return signed if pusher is None else await pusher.witnessed(signed, edge.log)


@asynccontextmanager
async def pushing(edge: EdgeState, witnesses: Sequence[str]) -> AsyncIterator[None]:
    """``edge.witnesses`` while the app runs: a :class:`Pusher`, or None with no witness."""
    if not witnesses:
        edge.witnesses = None
        yield
        return
    import httpx

    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        edge.witnesses = Pusher([parse_target(w) for w in witnesses], client)
        yield
