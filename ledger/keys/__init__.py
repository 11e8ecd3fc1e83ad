"""Secrets and names at rest: the keyring, the signer, keyed digests, sealed names."""
