"""The lease model: rules, calls, one Batch per transaction, entries and signed answers."""
