"""Loaded by every process of ``bench/sequencer_probe.py``'s ``tenure serve`` (its PYTHONPATH):
lease calls go to the probe's sequencer. Nothing else imports this."""

import os

if os.environ.get("TENURE_PROBE_SOCKET"):
    import sequencer_probe

    sequencer_probe.hook_workers()
