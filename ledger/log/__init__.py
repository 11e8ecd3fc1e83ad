"""The ledger as auditors read it: the Merkle tree, checkpoints, tiles, exports."""
