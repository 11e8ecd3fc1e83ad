"""Live key rotation: every process of a running service switches to a new signing key at one
recorded instant.

A verifier accepts a key only for dates in ``[validFrom, validUntil)`` (``verify/trust.py``), so
no process may sign with the old key after the keyring retired it. The first process to see the
new key records its period as starting ``ROTATE_AHEAD_MS`` ahead (:func:`record`; the first
record wins), and every process schedules its :func:`switch` for exactly that instant. The
record goes through a second storage handle, off the event loop: the service's own writer
belongs to the group committer (0017). Callers pass the clock, the ledger's location and what
signs, so this module knows nothing of the runtime that wires them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.backends import open_storage
from ledger.keys.keyring import SigningKey, record_keys
from ledger.keys.signer import Signer
from ledger.storage import Storage, StorageError

if TYPE_CHECKING:
    from ledger.lease.provenance import Issuer
    from ledger.log.view import LogReader

logger = logging.getLogger("tenure")

CLOCK_WAIT_SECONDS = 0.005
"""How long to wait for the clock to pass ``at``; a fixed test clock never does."""


ROTATE_AHEAD_MS = 1500
"""A new key takes over this long after the first process to see it: every worker of
``tenure serve --workers N`` polls the key folder each second (or is signalled), reads the
instant the first one recorded, and switches at exactly that instant — so no worker signs with
the old key after the period the keyring publishes for it has ended."""


def record(location: str | Path, clock: Callable[[], int], key: SigningKey) -> int:
    """Record ``key`` as the log's key from ``ROTATE_AHEAD_MS`` ahead (unless another process
    already did: the first record wins) in the ledger at ``location``, and return the instant
    it takes over (ms)."""
    storage = open_storage(location)
    try:
        record_keys(storage, key, clock() + ROTATE_AHEAD_MS)
        return next(r.valid_from for r in storage.signing_keys() if r.did == key.did)
    finally:
        storage.close()


def switch(
    key: SigningKey, at: int, clock: Callable[[], int], issuer: Issuer, log: LogReader
) -> None:
    """Make ``issuer`` (receipts) and ``log`` (checkpoints) sign with ``key`` from ``at`` on;
    runs on the event loop, scheduled for ``at``."""
    deadline = time.monotonic() + CLOCK_WAIT_SECONDS
    while clock() < at and time.monotonic() < deadline:
        pass  # the timer may fire a hair early: no signature by the new key dated before ``at``
    issuer.signer = Signer(key.private_key)
    log.key = key
    logger.info("signing with the rotated key %s from %d", key.did, at)


def retired(storage: Storage, key: SigningKey, now: int) -> int | None:
    """When the log retired ``key`` if that instant has passed: another process or node rotated
    to a key this process's keys folder does not hold (yet). ``None`` while ``key`` is valid."""
    for found in storage.signing_keys():
        if found.did == key.did and found.valid_until is not None and found.valid_until <= now:
            return found.valid_until
    return None


def refuse_retired(storage: Storage, key: SigningKey, now: int) -> None:
    """At start: a keys folder whose newest key the log has retired is out of date — signing with
    it would make receipts no verifier accepts, and recording it would end the newer key's
    period. Raise :class:`StorageError` saying so."""
    if retired(storage, key, now) is not None:
        raise StorageError(
            f"the signing key {key.did} was retired by a rotation; this keys folder lacks the"
            " newer key: copy the keys folder from a node that has it (docs/postgres.md)"
        )
