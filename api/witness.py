"""The monitor's cosigning key, its memory, and the folder where its cosignatures are published.

The memory lives beside the key (``KEY.witness.json``): for each origin, the last checkpoint
this key cosigned. Whatever ``--state`` or ``--cosign-dir`` a run uses, the key never cosigns a
checkpoint inconsistent with one it cosigned before (C2SP tlog-witness): not another root for
the same size, not a smaller tree, and a larger one only with a consistency proof from the last.
The memory is replaced atomically before a cosignature is published, under a lock on the key.

The folder holds what a witness serves (https://c2sp.org/tlog-cosignature): ``checkpoint``
(the latest verified checkpoint with this cosigner's line appended), ``cosignatures.jsonl`` (one
line per cosigned checkpoint) and ``cosigner.vkey`` (the type 0x04 verifier key a log client
configures to require this witness)."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from api.files import atomic_write
from ledger.keys.keyring import write_private
from verify.cosignature import cosign, cosignature_vkey
from verify.errors import MalformedInput, ProofError
from verify.monitor_state import Finding, Seen, Violation, seen_of
from verify.note import check_key_name
from verify.rfc9162 import verify_consistency

CHECKPOINT = "checkpoint"
HISTORY = "cosignatures.jsonl"
VKEY = "cosigner.vkey"
MEMORY_TYPE = "tenure-witness-state"

Proof = Callable[[int, int], list[bytes]]
"""Fetches the consistency proof between two tree sizes of the log being cosigned."""


@dataclass(frozen=True)
class Witness:
    name: str
    key: Ed25519PrivateKey
    folder: Path
    memory: Path
    """``KEY.witness.json``: the last checkpoint cosigned per origin."""

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
        witness = cls(name, key, folder, key_path.with_name(key_path.name + ".witness.json"))
        witness.cosigned()  # an unreadable memory is refused now, before any work
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / VKEY, (witness.vkey() + "\n").encode())
        return witness

    def vkey(self) -> str:
        public = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cosignature_vkey(self.name, public)

    def cosigned(self) -> dict[str, Seen]:
        """The last checkpoint cosigned per origin (ValueError if the memory is unreadable)."""
        if not self.memory.exists():
            return {}
        try:
            data = json.loads(self.memory.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("type") != MEMORY_TYPE:
                raise MalformedInput(f"not a {MEMORY_TYPE} file")
            return {origin: seen_of(seen) for origin, seen in data["origins"].items()}
        except (ValueError, KeyError, TypeError, AttributeError, MalformedInput) as e:
            raise ValueError(f"{self.memory}: the witness's memory is unreadable: {e}") from e

    def cosign(self, seen: Seen, timestamp: int, proof: Proof) -> str:
        """Cosign a verified checkpoint consistent with all this key cosigned, and publish it;
        :class:`Violation` (with both checkpoints) if it is not."""
        with self.memory.with_name(self.memory.name + ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another monitor on this key waits
            memory = self.cosigned()
            last = memory.get(seen.origin)
            if last is not None:
                check_consistent(last, seen, proof)
            note = cosign(seen.note, self.name, self.key, timestamp)
            memory[seen.origin] = seen
            self._remember(memory)
        record = {"origin": seen.origin, "treeSize": seen.size, "time": timestamp, "note": note}
        with (self.folder / HISTORY).open("a", encoding="utf-8") as history:
            history.write(json.dumps(record, ensure_ascii=False) + "\n")
        atomic_write(self.folder / CHECKPOINT, note.encode())
        return note

    def _remember(self, memory: dict[str, Seen]) -> None:
        origins = {origin: seen.as_data() for origin, seen in memory.items()}
        data: dict[str, Any] = {"type": MEMORY_TYPE, "version": 1, "origins": origins}
        atomic_write(self.memory, json.dumps(data, indent=1).encode() + b"\n")


def check_consistent(last: Seen, new: Seen, proof: Proof) -> None:
    """Refuse ``new`` unless it equals or extends ``last``, the checkpoint cosigned before."""
    evidence = {"cosigned": last.as_data(), "served": new.as_data()}
    if new.size < last.size:
        message = f"tree size {new.size} served after this witness cosigned size {last.size}"
        raise Violation(Finding("witness-rollback", message, None, evidence))
    if new.size == last.size:
        if new.root != last.root:
            message = f"a second root for tree size {new.size}, which this witness cosigned"
            raise Violation(Finding("witness-split-view", message, None, evidence))
        return
    if last.size == 0:
        return
    hashes = proof(last.size, new.size)
    try:
        verify_consistency(last.size, new.size, last.root, new.root, hashes)
    except (ProofError, MalformedInput) as e:
        message = f"tree {new.size} does not extend the tree {last.size} this witness cosigned"
        raise Violation(Finding("witness-split-view", message, None, evidence)) from e
