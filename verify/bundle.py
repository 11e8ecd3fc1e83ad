"""Verifying an offline receipt bundle (DESIGN §6; the format is docs/bundle-format.md).

A bundle is self-contained JSON: a receipt, the exact bytes of the ledger entry it names, an
RFC 9162 inclusion proof of that entry into a signed C2SP checkpoint, the public keys needed,
and optionally a consistency proof from that checkpoint to a later signed one. Checks, each
reported with its outcome (STYLE 8), beyond those of ``verify.receipt`` (run with the bundle's
entry bytes, so the manifest's ``tenure.ledger.entry`` assertion is recomputed):

- ``bundle:format``: the versioned ``type`` and every section has its shape;
- ``keys``: each listed key is a well-formed did:key and is trusted. With no trusted key given
  this check fails (a bundle forged with the forger's own key would otherwise pass): the other
  checks still run under the bundle's own keys, which proves consistency, not origin;
- ``entry``: the entry's RFC 9162 leaf hash is the receipt's ``ledger.leafHash`` and the entry
  sits at the index the receipt and the proof name;
- ``checkpoint``: the C2SP signed note verifies under a trusted key named after its origin, and
  its tlog-checkpoint body is the origin, size and root the JSON states;
- ``witnesses`` (if a policy is given): K listed witnesses cosigned that note (verify.witnesses);
- ``inclusion``: the audit path leads from the entry to the checkpoint's root (§2.1.3.2);
- ``consistency`` (if present): the later checkpoint's note verifies and the consistency proof
  leads from the checkpoint to it (§2.1.4.2).

Pure: no I/O, no clock; each check is a function of ``verify/bundle_checks.py``.
``verify_document`` is what the CLI and ``POST /verify-provenance`` call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from verify.bundle_checks import (
    check_checkpoint,
    check_consistency,
    check_entry,
    check_inclusion,
    check_keys,
    check_origin,
    issuer,
)
from verify.bundle_format import (
    BUNDLE_TYPE,
    MalformedBundle,
    is_bundle,
    parse_bundle,
)
from verify.errors import MalformedInput, VerificationError
from verify.limits import check_bounds
from verify.receipt import Check, ReceiptError, Report, verify_receipt
from verify.witnesses import WitnessPolicy

__all__ = [
    "BUNDLE_TYPE",
    "BundleError",
    "MalformedBundle",
    "check_bundle",
    "is_bundle",
    "verify_bundle",
    "verify_document",
]


class BundleError(ReceiptError):
    """A bundle check failed; ``check`` names it."""


def verify_document(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
    origin: str | None = None,
    witnesses: WitnessPolicy | None = None,
) -> Report:
    """Verify a bundle, or else a saved response or bare credential (``verify_receipt``).

    Bounded work whatever the input: a document nested deeper or holding more values
    than ``verify.limits`` allows fails ``format`` at once, and a credential tenure would never
    issue fails before any canonicalization. Safe to run in a worker thread; pure.
    ``trusted`` may be ``{did: verify.trust.Period}`` to bound when each key may have signed.
    ``origin`` pins a bundle's log (a receipt alone names none); ``witnesses``, K of whom
    must have cosigned its checkpoint (a receipt alone carries none, so it fails that check).
    """
    try:
        check_bounds(document)
    except MalformedInput as error:
        return Report([Check("format", False, str(error))])
    if is_bundle(document):
        return verify_bundle(document, trusted, origin, witnesses)
    report = _receipt_report(document, trusted, request, entry)
    if witnesses is not None:
        report.add("witnesses", False, "a receipt alone carries no checkpoint: verify its bundle")
    return report


def _receipt_report(
    document: Any,
    trusted: Collection[str] | None,
    request: bytes | None = None,
    entry: bytes | None = None,
) -> Report:
    """``verify_receipt``, whose hashing can still raise on JSON that RFC 8785 cannot represent
    (an integer beyond 2**53, say): that is a failed ``format`` check, not a crash."""
    try:
        return verify_receipt(document, trusted, request, entry)
    except VerificationError as error:
        return Report([Check("format", False, str(error))])


def check_bundle(bundle: Any, trusted: Collection[str] | None) -> None:
    """The raising variant: BundleError naming the first failed check."""
    for check in verify_bundle(bundle, trusted).checks:
        if not check.ok:
            raise BundleError(check.name, check.detail)


def verify_bundle(
    bundle: Any,
    trusted: Collection[str] | None,
    origin: str | None = None,
    witnesses: WitnessPolicy | None = None,
) -> Report:
    """Every check of a bundle. ``trusted``: the did:keys to accept (or ``{did: Period}``);
    None trusts nothing: the report then fails ``keys`` and ``issuer``. ``origin``, if given,
    is the log the checkpoint must be of (the ``origin`` check)."""
    report = Report()
    try:
        parsed = parse_bundle(bundle)
    except MalformedInput as error:
        report.add("bundle:format", False, str(error))
        return report
    report.add("bundle:format", True, BUNDLE_TYPE)
    note_keys = check_keys(report, parsed, trusted)
    receipt = _receipt_report(parsed.receipt, trusted, entry=parsed.entry)
    report.checks += receipt.checks
    report.signed += ["entry, inclusion and checkpoint (signed notes)", *receipt.signed]
    report.unsigned += ["keys[].validFrom/validUntil", *receipt.unsigned]
    _run(report, "entry", lambda: check_entry(parsed))
    _run(
        report, "checkpoint", lambda: check_checkpoint(parsed.checkpoint, note_keys, issuer(parsed))
    )
    if origin is not None:
        _run(report, "origin", lambda: check_origin(parsed.checkpoint, origin))
    if witnesses is not None:
        _run(report, "witnesses", lambda: witnesses.check(parsed.checkpoint.note))
    _run(report, "inclusion", lambda: check_inclusion(parsed))
    if parsed.consistency is not None:
        consistency = parsed.consistency
        _run(report, "consistency", lambda: check_consistency(parsed, consistency, note_keys))
    return report


def _run(report: Report, name: str, check: Callable[[], str]) -> bool:
    """Record one check: its detail when it returns, the error when it raises."""
    try:
        detail = check()
    except VerificationError as error:
        return report.add(name, False, str(error))
    return report.add(name, True, detail)
