"""Checking what the server says against pinned keys, with ``verify/`` (pure, no I/O).

``trust`` is pinned once when a client is made: a did:key string, several, or the keyring that
``GET /api/v1/keys`` serves (``{"keys": [{"did": …}, …]}``).
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from api.client.errors import ReceiptInvalid
from verify.errors import MalformedInput, VerificationError
from verify.multikey import public_key_from_did
from verify.note import parse_checkpoint, verify_note
from verify.receipt import ReceiptError, check_receipt
from verify.witnesses import WitnessPolicy

Trust = str | Mapping[str, Any] | Collection[str]


def trusted_dids(trust: Trust | None) -> frozenset[str] | None:
    """The did:keys to accept, from any spelling of ``trust``; None means "do not check"."""
    if trust is None:
        return None
    if isinstance(trust, str):
        dids = [trust]
    elif isinstance(trust, Mapping):
        keys = trust.get("keys")
        if not isinstance(keys, list):
            raise ValueError('a keyring is {"keys": [{"did": …}, …]} as GET /api/v1/keys serves')
        dids = [str(key["did"]) for key in keys if isinstance(key, Mapping) and "did" in key]
    else:
        dids = [str(did) for did in trust]
    if not dids or not all(did.startswith("did:key:") for did in dids):
        raise ValueError("trust must name at least one did:key")
    return frozenset(dids)


def witness_policy(vkeys: Sequence[str], threshold: int | None) -> WitnessPolicy | None:
    """The client's k-of-n witness policy, or None without witnesses (ValueError if bad)."""
    if not vkeys and threshold is None:
        return None
    try:
        return WitnessPolicy.of(vkeys, threshold)
    except MalformedInput as error:
        raise ValueError(str(error).replace("--witness-threshold", "witness_threshold")) from error


def check_witnessed(document: Mapping[str, Any], policy: WitnessPolicy) -> None:
    """Raise ReceiptInvalid unless K listed witnesses cosigned the checkpoint note."""
    try:
        policy.check(str(document.get("note", "")))
    except VerificationError as error:
        raise ReceiptInvalid(f"the checkpoint is not witnessed: {error}", "witnesses") from error


def check_answer(document: Any, trusted: frozenset[str], request: bytes | None) -> None:
    """Raise ReceiptInvalid unless the answer's credential verifies under a trusted key (and,
    given ``request``, was issued for exactly that request)."""
    try:
        check_receipt(document, trusted, request)
    except ReceiptError as error:
        raise ReceiptInvalid(f"the answer's receipt does not verify: {error}", error.check) from (
            error
        )


def check_checkpoint(document: Mapping[str, Any], trusted: frozenset[str]) -> None:
    """Raise ReceiptInvalid unless a trusted key signs the checkpoint note (C2SP signed-note)
    and the note states the origin, size and root the JSON gives."""
    note, origin = str(document.get("note", "")), str(document.get("origin", ""))
    for did in sorted(trusted):
        try:
            raw = public_key_from_did(did).public_bytes(Encoding.Raw, PublicFormat.Raw)
            checkpoint = parse_checkpoint(verify_note(note, origin, raw))
        except VerificationError:
            continue
        root = base64.b64encode(checkpoint.root_hash).decode()
        if (checkpoint.size, root) != (document.get("treeSize"), document.get("rootHash")):
            raise ReceiptInvalid("the checkpoint JSON differs from its signed note", "checkpoint")
        return
    raise ReceiptInvalid("no trusted key signs the checkpoint note", "checkpoint")
