"""The names key of tests that open a storage directly (docs/decisions/0010)."""

from ledger.names import NameCodec

NAMES = NameCodec(bytes(range(32)))
"""A fixed key: the state tables of a test ledger are sealed as a server's are."""
