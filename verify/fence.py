"""The store-side fencing check: is a write's token backed by a valid lease receipt?

A store a worker writes to keeps the highest fencing token it has accepted for a resource and
refuses lower ones. ``verify_fence`` adds the proof: the token must come from a receipt that a
trusted key signed, for this resource, granting the lease (``acquire``, ``wait`` or ``renew``:
a ``get`` states a holder's token too, and anyone may ask for it), and not below ``min_token``.
A worker can then neither invent a token nor borrow one. Pure: no I/O, no clock; the same rules
as ``verifyFence`` of the TypeScript client (clients/js), which the tests hold it to.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from verify import ijson
from verify.errors import MalformedInput, VerificationError
from verify.receipt import ReceiptError, check_receipt
from verify.trust import Period, keyring_periods

__all__ = ["GRANTING_OPS", "Fence", "FenceRefused", "verify_fence"]

GRANTING_OPS = frozenset({"acquire", "wait", "renew"})
Trust = str | Mapping[str, Any] | Collection[str]


class FenceRefused(VerificationError):
    """A write to refuse; ``reason`` is the failed receipt check (``format``, ``proof``,
    ``issuer``, ``manifest…``, ``subject``) or ``grant``, ``resource``, ``token``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Fence:
    """What a verified receipt vouches for."""

    resource: str
    fencing_token: int
    holder: str | None
    expires_at: str | None
    issuer: str


def verify_fence(receipt: Any, *, trust: Trust, resource: str, min_token: int) -> Fence:
    """The fence ``receipt`` (a parsed document, or its JSON text or bytes, read strictly)
    proves for ``resource``; FenceRefused saying why it proves none.

    ``trust``: a did:key, several, or the keyring ``GET /api/v1/keys`` serves (whose validity
    periods then bound when each key may have signed). ``min_token``: the highest token the
    store has accepted for ``resource`` (equal is allowed: the same holder writing again).
    """
    trusted = _trusted(trust)
    if isinstance(receipt, str | bytes):
        receipt = _parsed(receipt)
    try:
        check_receipt(receipt, trusted)
    except ReceiptError as error:
        raise FenceRefused(error.check, str(error)) from error
    credential = receipt.get("_provenance", receipt)
    subject = credential["credentialSubject"]
    op, token = subject.get("op"), subject.get("fencingToken")
    if op not in GRANTING_OPS or subject.get("granted") is not True:
        raise FenceRefused("grant", f"the receipt of a {op!r} does not grant a lease")
    if subject.get("resource") != resource:
        said = str(subject.get("resource"))[:200]
        raise FenceRefused("resource", f"the receipt is for {said!r}, not {resource!r}")
    if not isinstance(token, int) or isinstance(token, bool) or token < min_token:
        raise FenceRefused("token", f"fencing token {token!r} is below {min_token}")
    holder, expires = subject.get("holder"), subject.get("expiresAt")
    return Fence(resource, token, holder, expires, str(credential["issuer"]))


def _parsed(text: str | bytes) -> Any:
    """A receipt's text read as every signed document is (a repeated key is never believed)."""
    try:
        return ijson.loads(text, "the receipt")
    except MalformedInput as error:
        raise FenceRefused("format", str(error)) from error


def _trusted(trust: Trust) -> Collection[str] | dict[str, Period]:
    """The keys to accept; MalformedInput if ``trust`` names none."""
    if isinstance(trust, str):
        dids: Collection[str] = {trust}
    elif isinstance(trust, Mapping):
        keys = trust.get("keys")
        if not isinstance(keys, list):
            raise MalformedInput(
                'a keyring is {"keys": [{"did": …}, …]} as GET /api/v1/keys serves'
            )
        dids = keyring_periods(keys)
    else:
        dids = {str(did) for did in trust}
    if not dids or not all(isinstance(d, str) and d.startswith("did:key:") for d in dids):
        raise MalformedInput("trust must name at least one did:key")
    return dids
