"""Loaded by every process of a probe's ``tenure serve`` (its PYTHONPATH): ``bench/
sequencer_probe.py``'s sends lease calls to its sequencer, ``bench/answer_probe.py``'s answers
grants at the cost native code would leave, ``bench/loop_commit_probe.py``'s writes its batches
on a writer thread or asks for its turns at once. Nothing else imports this."""

import os

if os.environ.get("TENURE_PROBE_SOCKET"):
    import sequencer_probe

    sequencer_probe.hook_workers()

if os.environ.get("TENURE_PROBE_ANSWER"):
    import answer_probe

    answer_probe.hook_workers()

if os.environ.get("TENURE_PROBE_LOOP_COMMIT"):
    import loop_commit_probe

    loop_commit_probe.hook_workers()
