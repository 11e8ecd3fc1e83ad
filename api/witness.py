"""The monitor's cosigning key and the folder where its cosigned checkpoints are published.

The folder holds what a witness serves (https://c2sp.org/tlog-cosignature): ``checkpoint``,
the latest verified checkpoint with this cosigner's line appended (replaced atomically);
``cosignatures.jsonl``, one line per cosigned checkpoint; and ``cosigner.vkey``, the verifier
key (type 0x04) a log client configures to require this witness.
"""

from __future__ import annotations

import json
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

from api.files import atomic_write
from ledger.keyring import write_private
from verify.cosignature import cosign, cosignature_vkey
from verify.errors import MalformedInput
from verify.monitor import Seen
from verify.note import check_key_name

CHECKPOINT = "checkpoint"
HISTORY = "cosignatures.jsonl"
VKEY = "cosigner.vkey"


@dataclass(frozen=True)
class Witness:
    name: str
    key: Ed25519PrivateKey
    folder: Path

    @classmethod
    def open(cls, key_path: Path, name: str, folder: Path) -> Witness:
        """Load the PEM key at ``key_path`` (created, mode 0600, if missing); ValueError if bad."""
        try:
            check_key_name(name)
        except MalformedInput as e:
            raise ValueError(f"--cosign-name: {e}") from e
        if not key_path.exists():
            pem = Ed25519PrivateKey.generate().private_bytes(
                Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
            )
            write_private(key_path, pem)
        key = load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError(f"{key_path} is not an Ed25519 private key")
        witness = cls(name, key, folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / VKEY).write_text(witness.vkey() + "\n", encoding="utf-8")
        return witness

    def vkey(self) -> str:
        public = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cosignature_vkey(self.name, public)

    def cosign(self, seen: Seen, timestamp: int) -> str:
        """Cosign a checkpoint the monitor verified and publish it; return the cosigned note."""
        note = cosign(seen.note, self.name, self.key, timestamp)
        record = {"origin": seen.origin, "treeSize": seen.size, "time": timestamp, "note": note}
        with (self.folder / HISTORY).open("a", encoding="utf-8") as history:
            history.write(json.dumps(record, ensure_ascii=False) + "\n")
        atomic_write(self.folder / CHECKPOINT, note.encode())
        return note
