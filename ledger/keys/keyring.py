"""Secret material kept in the keys folder (DESIGN §5): files of mode 0600, never in git."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from ledger.files import create_once
from ledger.storage import KeyRecord, Storage
from verify.multikey import did_key, public_key_multibase

PSEUDONYM_SECRET = "pseudonym.secret"
NAMES_KEY = "names.key"


class KeyFileError(ValueError):
    """A file of the keys folder cannot be used; the message names it and what to do."""


def write_private(path: Path, data: bytes) -> bool:
    """Create `path` with mode 0600 from the start (no window where it is world-readable),
    durably (ledger/files.py); False if it already existed and was left alone."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    return create_once(path, data, 0o600)


def load_or_create_secret(keys_dir: Path) -> bytes:
    """The master secret under which ledger pseudonyms are derived (DESIGN §4)."""
    return _load_or_create(keys_dir / PSEUDONYM_SECRET)


def load_or_create_names_key(keys_dir: Path) -> bytes:
    """The key that seals the names of the state tables (docs/decisions/0010); losing it
    loses the live leases' state, never the ledger."""
    return _load_or_create(keys_dir / NAMES_KEY)


def _load_or_create(path: Path) -> bytes:
    if not path.exists():
        write_private(path, secrets.token_bytes(32))
    data = path.read_bytes()
    if len(data) != 32:
        raise KeyFileError(f"{path} must hold 32 bytes, found {len(data)}: restore it from backup")
    return data


SIGNING_GLOB = "signing-*.key"


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One Ed25519 key of the keys folder; the newest one signs."""

    private_key: Ed25519PrivateKey
    created_at: int
    path: Path

    @property
    def public_bytes(self) -> bytes:
        return self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def did(self) -> str:
        return did_key(self.private_key.public_key())

    @property
    def multikey(self) -> str:
        return public_key_multibase(self.private_key.public_key())


def load_signing_keys(keys_dir: Path) -> list[SigningKey]:
    """Every signing key in the folder, oldest first (file names sort by creation time)."""
    return [_signing_key(path) for path in sorted(keys_dir.glob(SIGNING_GLOB))]


def _signing_key(path: Path) -> SigningKey:
    """One key file; KeyFileError naming it if it is empty, cut short or not Ed25519."""
    pem = path.read_bytes()
    try:
        key = load_pem_private_key(pem, password=None)
        created = int(path.stem.split("-")[1])
    except (ValueError, TypeError, IndexError) as error:
        found = "it is empty" if not pem else f"{len(pem)} bytes that are no PEM private key"
        raise KeyFileError(
            f"signing key {path} cannot be read ({found}): move it out of the folder if it was"
            " never used, else restore it from backup"
        ) from error
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key {path} is not an Ed25519 private key")
    return SigningKey(key, created, path)


def newest_key_file(keys_dir: Path) -> Path | None:
    """The newest signing key's file (names sort by creation time), without reading it."""
    return max(keys_dir.glob(SIGNING_GLOB), default=None)


def create_signing_key(keys_dir: Path, now_ms: int) -> SigningKey:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    path = keys_dir / f"signing-{now_ms:015d}-{secrets.token_hex(4)}.key"
    write_private(path, pem)
    return SigningKey(key, now_ms, path)


def signing_keys(keys_dir: Path, now_ms: int) -> list[SigningKey]:
    """The folder's keys, generating the first one on first start."""
    keys = load_signing_keys(keys_dir)
    return keys or [create_signing_key(keys_dir, now_ms)]


def record_keys(storage: Storage, active: SigningKey, now_ms: int) -> None:
    """Every public key ever used, with its validity period, also lives in the ledger database.

    Called when the server starts signing with ``active`` (at start-up, or a live rotation in
    ``ledger/rotation.py``): a key is valid from the moment it began signing until the moment a
    newer one did, which is exactly when it signed.
    """
    storage.record_key_use(
        KeyRecord(active.did, active.public_bytes, active.multikey, now_ms, None)
    )


def keys_fingerprint(master_secret: bytes) -> str:
    """Names a keys folder's contents without revealing them: nodes sharing one database must
    all use the same folder (``ledger/postgres/membership.py`` compares this at start)."""
    return hmac.new(master_secret, b"tenure keys folder fingerprint", hashlib.sha256).hexdigest()
