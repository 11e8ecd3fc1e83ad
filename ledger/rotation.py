"""Live key rotation: every process of a running service switches to a new signing key at one
recorded instant.

Receipts and checkpoints are dated by the runtime's clock when they are signed, and a verifier
accepts a key only for dates in ``[validFrom, validUntil)`` (``verify/trust.py``). So no process
may sign with the old key after the instant the keyring says it was retired. The first process to
see the new key (each polls the key folder every second, and SIGHUP reaches every worker) records
its period as starting ``ROTATE_AHEAD_MS`` ahead — the old key's period ends there — and every
process, reading that one recorded instant back, schedules its switch for exactly then: signatures
before it are the old key's, signatures from it the new key's, in every worker. The timer may run
late, so whatever dates a signature takes the runtime's ``signing_clock``, which makes a switch
that is due before it answers.

The record goes through a second storage handle, off the event loop: the service's own writer
belongs to the group committer, whose turns of the ledger's lock the loop may hold (0017).
``record_key_use`` keeps the first record, so all processes agree.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ledger.keyring import SigningKey, record_keys
from ledger.signer import Signer
from ledger.storage import Storage, StorageError, open_storage

if TYPE_CHECKING:
    from ledger.runtime import Runtime

logger = logging.getLogger("tenure")

CLOCK_WAIT_SECONDS = 0.005
"""How long to wait for the clock to pass ``at``; a fixed test clock never does."""


ROTATE_AHEAD_MS = 1500
"""A new key takes over this long after the first process to see it: every worker of
``tenure serve --workers N`` polls the key folder each second (or is signalled), reads the
instant the first one recorded, and switches at exactly that instant — so no worker signs with
the old key after the period the keyring publishes for it has ended."""


def record(runtime: Runtime, key: SigningKey) -> int:
    """Record ``key`` as the log's key from ``ROTATE_AHEAD_MS`` ahead (unless another process
    already did: the first record wins) and return the instant it takes over (ms)."""
    storage = open_storage(runtime.config.database or runtime.config.data_dir)
    try:
        record_keys(storage, key, runtime.clock() + ROTATE_AHEAD_MS)
        return next(r.valid_from for r in storage.signing_keys() if r.did == key.did)
    finally:
        storage.close()


def switch(runtime: Runtime, key: SigningKey, at: int) -> None:
    """Sign with ``key`` from ``at`` on; runs on the event loop, scheduled for ``at``."""
    deadline = time.monotonic() + CLOCK_WAIT_SECONDS
    while runtime.clock() < at and time.monotonic() < deadline:
        pass  # the timer may fire a hair early: no signature by the new key dated before ``at``
    runtime.issuer.signer = Signer(key.private_key)
    runtime.log.key = key
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
