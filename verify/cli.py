"""``verify-provenance``: check saved responses, credentials and bundles offline (DESIGN §6).

Reads the files named, and nothing else: no socket, no server storage. Only ``verify/``, the
standard library, cryptography, rfc8785 and pyld are imported, so it runs where FastAPI and
SQLite are not installed (tests/test_verifier_offline.py holds it to that).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from verify.bundle import is_bundle, verify_document
from verify.errors import MalformedInput
from verify.ijson import loads
from verify.limits import check_bounds
from verify.multikey import public_key_from_did
from verify.receipt import Report
from verify.trust import Period, keyring_periods
from verify.witnesses import WitnessPolicy

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
TRUST_HINT = (
    "no trusted key was given: pass --trust did:key:… (the server's key) or --keys keyring.json "
    "(the JSON of GET /api/v1/keys)"
)
EPILOG = """\
No trusted key, no pass: without --trust or --keys every file fails (a bundle its keys check,
a response or credential its issuer check); the other checks still run and are reported.
With --keys, a receipt issued outside its key's validFrom/validUntil fails its issuer check.
With --origin, a bundle whose checkpoint is of another log fails its origin check (a saved
response or credential names no log: verify its bundle to pin one).
With --witness (repeatable), a bundle passes only if its checkpoint carries valid cosignatures
by --witness-threshold of the listed witnesses (default: all); the report names who signed.
A saved response or credential carries no checkpoint, so it fails that check.
The report names which parts of a file the signature covers and which it does not.

exit codes:
  0  every file passes every check
  1  some check failed (each failed check is named, with the reason)
  2  bad usage, or a file (or the keyring) cannot be read, is not I-JSON (RFC 7493: a
     repeated key, a lone surrogate, an integer beyond 2**53), or nests deeper or holds
     more values than any tenure document (see verify/limits.py)
"""


class UsageError(Exception):
    """Bad arguments, or input that cannot be read or parsed (exit 2)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One file's verdict: its report, or why it could not be read."""

    path: str
    kind: str
    report: Report | None
    error: str | None = None

    def as_data(self) -> dict[str, Any]:
        if self.report is None:
            return {"file": self.path, "status": "error", "error": self.error}
        return {"file": self.path, "kind": self.kind, **self.report.as_data()}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would sys.exit(2); main returns it
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verify-provenance",
        description="Verify tenure receipts (saved responses, credentials) and receipt bundles "
        "offline: signatures, manifest hashes, ledger inclusion and checkpoints.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON files ('-' for stdin)")
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument(
        "--trust", action="append", metavar="DID", help="a trusted did:key (repeatable)"
    )
    trust.add_argument("--keys", metavar="KEYRING", help="trust the keys of a GET /api/v1/keys")
    parser.add_argument(
        "--origin",
        help="the log's checkpoint origin (its first note line): a bundle of another log fails",
    )
    parser.add_argument(
        "--witness",
        action="append",
        default=[],
        metavar="VKEY",
        help="a witness's cosignature/v1 verifier key, e.g. its cosigner.vkey (repeatable)",
    )
    parser.add_argument(
        "--witness-threshold",
        type=int,
        metavar="K",
        help="how many listed witnesses must have cosigned (default: every one listed)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the verifier; the exit code is the documented one (see ``--help``)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        trusted = _trusted(args.trust, args.keys)
        witnesses = _witnesses(args.witness, args.witness_threshold)
    except UsageError as error:
        parser.print_usage(sys.stderr)
        print(f"verify-provenance: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else EXIT_PASS
    outcomes = [_verify_file(path, trusted, args.origin, witnesses) for path in args.files]
    try:
        _print(outcomes, trusted is None, args.json, _stdout())
        sys.stdout.flush()
    except BrokenPipeError:  # `verify-provenance --json … | head`: the reader has had enough
        _silence_stdout()
    return _exit_code(outcomes)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again (the
    recipe of the Python docs, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _trusted(
    dids: list[str] | None, keyring: str | None
) -> frozenset[str] | dict[str, Period] | None:
    """The trusted dids; from a keyring, with the period each key was valid in."""
    trusted: frozenset[str] | dict[str, Period] | None = None
    if keyring is not None:
        trusted = _keyring_periods(_load(keyring, "keyring"))
    elif dids is not None:
        trusted = frozenset(dids)
    for did in trusted or ():
        try:
            public_key_from_did(did)
        except MalformedInput as error:
            raise UsageError(f"{did!r} is not an Ed25519 did:key: {error}") from error
    return trusted


def _witnesses(vkeys: list[str], threshold: int | None) -> WitnessPolicy | None:
    """The k-of-n witness policy of ``--witness``/``--witness-threshold``, if any."""
    if not vkeys and threshold is None:
        return None
    try:
        return WitnessPolicy.of(vkeys, threshold)
    except MalformedInput as error:
        raise UsageError(str(error)) from error


def _keyring_periods(keyring: Any) -> dict[str, Period]:
    """``{did: Period}`` of ``{"keys": [{"did": …}, …]}`` (GET /api/v1/keys), or a bare list."""
    keys = keyring.get("keys") if isinstance(keyring, dict) else keyring
    if not isinstance(keys, list) or not keys or not all(isinstance(k, dict) for k in keys):
        raise UsageError('the keyring must be {"keys": [{"did": …}, …]}, as GET /api/v1/keys')
    try:
        return keyring_periods(keys)
    except MalformedInput as error:
        raise UsageError(f"keyring: {error}") from error


def _load(path: str, what: str) -> Any:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as file:
                text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {what} {path}: {error}") from error
    try:
        document = loads(text, f"{what} {path}")
        check_bounds(document, f"{what} {path}")
    except MalformedInput as error:
        raise UsageError(str(error)) from error
    return document


def _verify_file(
    path: str,
    trusted: Collection[str] | None,
    origin: str | None,
    witnesses: WitnessPolicy | None = None,
) -> Outcome:
    try:
        document = _load(path, "file")
    except UsageError as error:
        return Outcome(path, "unreadable", None, str(error))
    kind = "bundle" if is_bundle(document) else "receipt"
    report = verify_document(document, trusted, origin=origin, witnesses=witnesses)
    return Outcome(path, kind, report)


def _exit_code(outcomes: Sequence[Outcome]) -> int:
    if any(outcome.report is None for outcome in outcomes):
        return EXIT_USAGE
    return EXIT_PASS if all(o.report is not None and o.report.ok for o in outcomes) else EXIT_FAIL


def _print(outcomes: Sequence[Outcome], untrusted: bool, as_json: bool, out: TextIO) -> None:
    for outcome in outcomes:
        if as_json:
            print(json.dumps(outcome.as_data(), ensure_ascii=False), file=out)
        else:
            out.write(_text(outcome, untrusted))


def _text(outcome: Outcome, untrusted: bool) -> str:
    """One ✓/✗ line per check under a heading naming the file and its verdict."""
    if outcome.report is None:
        return f"{outcome.path}: ERROR {outcome.error}\n"
    report = outcome.report
    lines = [f"{outcome.path}: {outcome.kind} {'PASS' if report.ok else 'FAIL'}"]
    for check in report.checks:
        lines.append(f"  {'✓' if check.ok else '✗'} {check.name}: {check.detail}")
    if report.signed:
        lines.append(f"  signed: {'; '.join(report.signed)}")
    if report.unsigned:
        lines.append(f"  NOT signed (nothing vouches for these): {', '.join(report.unsigned)}")
    failed = [check.name for check in report.checks if not check.ok]
    if failed:
        lines.append(f"  failed: {', '.join(failed)}")
    if untrusted and {"issuer", "keys"} & set(failed):
        lines.append(f"  hint: {TRUST_HINT}")
    return "\n".join(lines) + "\n"


def _stdout() -> TextIO:
    """stdout, writing what its encoding cannot (✓ on an ASCII terminal) as '?'."""
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(errors="replace")
    return out
