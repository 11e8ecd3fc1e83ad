"""Secret material kept in the keys folder (DESIGN §5): files of mode 0600, never in git."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

PSEUDONYM_SECRET = "pseudonym.secret"


def write_private(path: Path, data: bytes) -> None:
    """Create `path` with mode 0600 from the start (no window where it is world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def load_or_create_secret(keys_dir: Path) -> bytes:
    """The master secret under which ledger pseudonyms are derived (DESIGN §4)."""
    path = keys_dir / PSEUDONYM_SECRET
    if not path.exists():
        write_private(path, secrets.token_bytes(32))
    data = path.read_bytes()
    if len(data) != 32:
        raise ValueError(f"{path} must hold 32 bytes, found {len(data)}")
    return data
