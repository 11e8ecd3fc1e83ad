"""Live key rotation: a running service switches to a new signing key at once.

Receipts and checkpoints are dated by the runtime's clock when they are signed, and a verifier
accepts a key only for dates in ``[validFrom, validUntil)`` (``verify/trust.py``). So the switch
must be one step that no signature can straddle: the new key's period, starting at ``at`` = one
millisecond after the clock's current reading, is recorded durably (the old key's period ends
there), then the issuer and the log reader take the new key before anything else runs on the
event loop. The loop is held for that one storage write (milliseconds, once per rotation):
every signature before it is dated before ``at`` with the old key, every one after at or past
``at`` with the new key.

The record goes through a second storage handle: the service's own writer belongs to the group
committer's thread. ``record_key_use`` is idempotent, so several processes rotating to the same
key agree.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ledger.keyring import SigningKey, record_keys
from ledger.signer import Signer
from ledger.storage import open_storage

if TYPE_CHECKING:
    from ledger.runtime import Runtime

logger = logging.getLogger("tenure")

CLOCK_WAIT_SECONDS = 0.005
"""How long to wait for the clock to pass ``at``; a fixed test clock never does."""


def rotate(runtime: Runtime, key: SigningKey) -> None:
    """Record ``key`` as the log's key from the next millisecond and sign with it from then on.
    Runs on the event loop and holds it until the switch is done (see the module docstring)."""
    at = runtime.clock() + 1
    storage = open_storage(runtime.config.data_dir)
    try:
        record_keys(storage, key, at)
    finally:
        storage.close()
    deadline = time.monotonic() + CLOCK_WAIT_SECONDS
    while runtime.clock() < at and time.monotonic() < deadline:
        pass  # at most a millisecond: no signature may be dated before ``at`` by the new key
    runtime.issuer.signer = Signer(key.private_key)
    runtime.log.key = key
    logger.info("signing with the rotated key %s from %d", key.did, at)
