"""The machine that writes: the service's front, group commit, the checkpoint turn."""
