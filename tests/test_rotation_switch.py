"""A scheduled key switch is made by the first signature dated at or after its instant, whether
its timer has run or not (ledger/runtime.py ``signing_clock``).

The switch's timer may run a millisecond or more late; before this, an answer signed in between
was dated at or after the instant the keyring retired the old key and signed by it — a receipt
that does not verify (``tests/test_key_rotation_live.py`` failed so about one run in six). A
fixed clock here: the timer, 1.5 s of real time away, never runs during the test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ledger.keys.keyring import create_signing_key
from ledger.rotation import ROTATE_AHEAD_MS
from ledger.runtime import Runtime, RuntimeConfig

START = 1_780_000_000_000


def test_the_first_signature_due_after_the_switch_makes_it(tmp_path: Path) -> None:
    now = [START]

    async def scenario() -> None:
        config = RuntimeConfig(
            tmp_path / "data", tmp_path / "keys", clock=lambda: now[0], key_watch_interval=3600
        )
        runtime = Runtime.open(config)
        await runtime.start()
        try:
            old = runtime.issuer.signer.did
            new = create_signing_key(tmp_path / "keys", now[0] + 1).did  # `tenure keys rotate`
            await runtime.reload_keys()
            at = START + ROTATE_AHEAD_MS
            keys = runtime.storage.signing_keys()
            periods = {key.did: (key.valid_from, key.valid_until) for key in keys}
            assert periods[old][1] == at and periods[new] == (at, None)
            now[0] = at - 1
            assert runtime.signing_clock() == at - 1
            assert runtime.issuer.signer.did == old and runtime.log.key.did == old
            now[0] = at  # the instant the old key was retired: its timer has not run
            assert runtime.signing_clock() == at
            assert runtime.issuer.signer.did == new and runtime.log.key.did == new
            signed = await runtime.publish_checkpoint()  # dated at the instant: the new key's
            stored = runtime.storage.latest_checkpoint()
            assert signed.timestamp == at and stored is not None and stored.key_did == new
            assert runtime.signing_clock() == at  # made once; nothing left to switch
        finally:
            await runtime.stop()

    asyncio.run(scenario())
