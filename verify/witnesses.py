"""k-of-n witness policy: a checkpoint passes only with K valid cosignatures by listed witnesses.

A witness is named by its cosignature/v1 verifier key (``name+hex(key ID)+base64(0x04 ‖ key)``,
c2sp.org/tlog-cosignature), as ``tenure monitor --cosign-key`` writes it to ``cosigner.vkey``.
Cosignatures by unlisted keys are ignored; one that names a listed key but does not verify
counts as absent and is reported. Pure: no I/O."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from verify.cosignature import ALG_COSIGNATURE_V1, cosignature_key_id, verify_cosignature
from verify.errors import MalformedInput, SignatureError, VerificationError

__all__ = ["WitnessKey", "WitnessPolicy", "parse_witness_vkey"]


@dataclass(frozen=True)
class WitnessKey:
    name: str
    public: bytes
    vkey: str


def parse_witness_vkey(text: str) -> WitnessKey:
    """A cosignature/v1 verifier key, its key ID checked (MalformedInput if not one)."""
    name, sep, rest = text.strip().partition("+")
    hex_id, sep2, encoded = rest.partition("+")
    if not (sep and sep2):
        raise MalformedInput(f"witness key {text!r} is not name+keyid+key")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as e:
        raise MalformedInput(f"witness key {text!r}: the key is not base64") from e
    if raw[:1] != ALG_COSIGNATURE_V1 or len(raw) != 33:
        raise MalformedInput(f"witness key {name!r} is not an Ed25519 cosignature/v1 key (0x04)")
    if hex_id != cosignature_key_id(name, raw[1:]).hex():
        raise MalformedInput(f"witness key {name!r}: the key ID does not match its name and key")
    return WitnessKey(name, raw[1:], text.strip())


@dataclass(frozen=True)
class WitnessPolicy:
    """The witnesses a verifier lists and how many of them must have cosigned."""

    keys: tuple[WitnessKey, ...]
    threshold: int

    @classmethod
    def of(cls, vkeys: Sequence[str], threshold: int | None) -> WitnessPolicy:
        """From the ``--witness`` keys and ``--witness-threshold`` (default: all of them);
        MalformedInput naming the option if they do not make a policy."""
        keys = tuple(parse_witness_vkey(v) for v in vkeys)
        if not keys:
            raise MalformedInput("--witness: at least one witness key is needed")
        if len({key.vkey for key in keys}) != len(keys):
            raise MalformedInput("--witness: a key is listed twice")
        k = len(keys) if threshold is None else threshold
        if not 1 <= k <= len(keys):
            raise MalformedInput(f"--witness-threshold must be 1..{len(keys)}, not {k}")
        return cls(keys, k)

    def signers(self, note: str) -> tuple[list[str], list[str]]:
        """(names of listed witnesses whose cosignature verifies, why each other one does not)."""
        signed, missing = [], []
        for key in self.keys:
            try:
                verify_cosignature(note, key.name, key.public)
                signed.append(key.name)
            except (SignatureError, MalformedInput) as e:
                missing.append(f"{key.name}: {e}")
        return signed, missing

    def check(self, note: str) -> str:
        """What passed (the witnesses that signed), or VerificationError saying who did not."""
        signed, missing = self.signers(note)
        counted = f"{len(signed)} of {len(self.keys)} listed, {self.threshold} needed"
        if len(signed) < self.threshold:
            who = ", ".join(signed) or "none"
            raise VerificationError(f"cosigned by {who} ({counted}); " + "; ".join(missing))
        return f"cosigned by {', '.join(signed)} ({counted})"
