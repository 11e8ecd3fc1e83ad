"""Rule 9's waiter: a caller blocked in `wait`, as the process that holds its caller sees it.

The queue itself is the storage's ``waiters`` table (docs/decisions/0006): a caller joins inside
the transaction that refused it ``HELD``, and every transaction that frees a slot — in any
process — serves the resource's waiters in the order they queued. This process keeps only the
future its caller awaits, resolved after the commit that granted it.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field

from ledger.calls import Answer, KeyRevoked, LeaseCall


@dataclass(slots=True, eq=False)  # two waiters are never the same one, whatever they ask
class Waiter:
    call: LeaseCall
    future: asyncio.Future[Answer]
    waiter_id: str = field(default_factory=lambda: secrets.token_hex(16))
    """128 random bits: names the row, and derives the owner token of a grant (0007)."""
    granted: Answer | None = None
    """Set by this process's writer when its transaction grants the waiter (before commit)."""
    refused: KeyRevoked | None = None
    """Set instead when its API key was revoked before a slot came: it is answered 401."""

    @property
    def abandoned(self) -> bool:
        """The caller is gone (cancelled): grant it no slot."""
        return self.future.cancelled()
