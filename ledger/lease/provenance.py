"""The `_provenance` credential of every answer (DESIGN §5); issuing side.

A VC 2.0 credential, issued by the signing key's did:key, whose subject states the answer (op,
outcome, resource, holder, fencing token, expiry, ledger position, and the ledger pseudonyms of
the names) plus a C2PA-style manifest: one SHA-256 per assertion over the canonical request
(secrets removed), the canonical `data` (secrets removed) and the ledger entry the call appended
(or, for reads and refusals, the ledger state the answer was read from). The receipt format is
fixed in docs/decisions/0002-receipt-format.md; ``verify/receipt.py`` is the verifying half.
"""

from __future__ import annotations

import hashlib
import json
from binascii import b2a_base64
from typing import Any

from ledger.keys.signer import Signer
from ledger.lease.answers import redact
from verify.dataintegrity import JCS_SUITE
from verify.errors import VerificationError
from verify.jcs import canonicalize, encode_plain, is_plain
from verify.receipt import (
    CONTEXTS,
    LABEL_DATA,
    LABEL_ENTRY,
    LABEL_REQUEST,
    LABEL_STATE,
    SECRET_DATA_FIELDS,
    SECRET_REQUEST_FIELDS,
    SUBJECT_FIELDS,
    state_bytes,
)

try:  # built from native/ where a C compiler was (pyproject.toml: optional)
    from ledger._native import Answerer, encode_sorted

    HAVE_NATIVE = True
except ImportError:  # pragma: no cover - exercised where the extension was not built
    HAVE_NATIVE = False

CLAIM_GENERATOR = "tenure/0.1.0"

_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # what json.dumps makes


def dumps(value: Any) -> bytes:
    """Compact JSON, as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` writes
    it (an answer's ``data``), with one encoder made once instead of one per answer."""
    return _JSON.encode(value).encode()


def digest(data: bytes) -> str:
    """Base64 SHA-256, as the manifest's hashes are written (``base64.b64encode``'s bytes,
    without its wrapper: three per answer)."""
    return b2a_base64(hashlib.sha256(data).digest(), newline=False).decode()


UNPARSED: Any = object()
"""``canonical_request``'s default ``document``: the body has not been read as JSON yet."""


def canonical_request(
    method: str, path: str, body: bytes | None, document: Any = UNPARSED
) -> bytes:
    """The request as the manifest hashes it: secrets removed, results redacted. A body that is
    not I-JSON (not JSON at all, NaN, an integer past 2**53, a lone surrogate) is represented
    by the SHA-256 of its bytes instead, and so is one nested too deeply to walk.

    ``document`` is ``json.loads(body)`` where the caller has it already (STYLE 12b: the edge
    parsed the body to refuse duplicate keys), so the body is not parsed twice."""
    view: dict[str, Any] = {"method": method, "path": path, "body": None}
    if body:
        try:
            parsed = json.loads(body) if document is UNPARSED else document
            view["body"] = _without_secrets(parsed)
            return _canonical(view)
        except (ValueError, VerificationError, RecursionError):
            view["body"] = {"unparsedSha256": hashlib.sha256(body).hexdigest()}
    return _canonical(view)


def _canonical(value: Any) -> bytes:
    """``canonicalize(value)``, in native code where it is built and the value plain."""
    made = encode_sorted(value) if HAVE_NATIVE else None
    return canonicalize(value) if made is None else made


def _without_secrets(parsed: Any) -> Any:
    if not isinstance(parsed, dict):
        return parsed
    kept = {k: v for k, v in parsed.items() if k not in SECRET_REQUEST_FIELDS}
    if "result" in kept:
        kept["result"] = redact(kept["result"])
    return kept


class Issuer:
    """Issues the Verifiable Credential (``_provenance``) over every answer (DESIGN §5), and
    writes the answer, by :meth:`encode_answer`.

    The reference writer is Python (:meth:`issue_json`): with eddsa-jcs-2022 and plain JSON
    (``verify.jcs.is_plain``) nothing is canonicalized twice, as the subject's and the proof's
    bytes are spliced into frames made once. The accelerator is native code (``native/``,
    ``native=True`` where it is built), which writes the same bytes in one call or declines.
    """

    def __init__(self, signer: Signer, native: bool = True) -> None:
        self._use_native = native and HAVE_NATIVE
        self.signer = signer

    def accelerate(self, on: bool) -> None:
        """Switch the native writer on (where it is built) or off: the same bytes either way."""
        self._use_native = on and HAVE_NATIVE
        self.signer = self._signer

    @property
    def signer(self) -> Signer:
        """The key it signs with; setting it (live rotation) rebuilds the frame, which names
        the issuer, before the next credential."""
        return self._signer

    @signer.setter
    def signer(self, signer: Signer) -> None:
        frame = _credential_frame(signer.did)
        self._native = _answerer(signer, frame) if self._use_native else None
        self._head, self._frame, self._signer = _credential_head(signer.did), frame, signer

    def encode_answer(
        self,
        data: dict[str, Any],
        request: bytes,
        entry: bytes | None,
        pseudonyms: dict[str, str] | None,
        now: str,
        suite: str,
        owner_token: str | None = None,
    ) -> bytes:
        """The answer's JSON, ``{"data": data, "_provenance": credential}``: by the accelerator
        where it takes the answer, else by the reference writer; the same bytes either way.
        A grant's ``owner_token`` is put last in ``data`` on the wire, and never hashed."""
        made = self.native_answer(data, request, entry, pseudonyms, now, suite, owner_token)
        if made is not None:
            return made
        credential, text = self.issue_json(data, request, entry, pseudonyms, now, suite)
        if text is None:
            shown = data if owner_token is None else data | {"ownerToken": owner_token}
            return dumps({"data": shown, "_provenance": credential})
        return (
            b'{"data":' + _with_token(dumps(data), owner_token) + b',"_provenance":' + text + b"}"
        )

    def native_answer(
        self,
        data: dict[str, Any],
        request: bytes,
        entry: bytes | None,
        pseudonyms: dict[str, str] | None,
        now: str,
        suite: str,
        owner_token: str | None = None,
    ) -> bytes | None:
        """:meth:`encode_answer`'s bytes written by native code, for eddsa-jcs-2022 and an
        answer whose every part is plain JSON; None where it is off or declines."""
        if self._native is None or suite != JCS_SUITE:
            return None
        label, ledger = _ledger_assertion(data, entry)
        stamp = self._signer.stamp_bytes(now)
        return self._native.envelope(data, pseudonyms, request, label, ledger, stamp, owner_token)

    def issue(
        self,
        data: dict[str, Any],
        request: bytes,
        entry: bytes | None,
        pseudonyms: dict[str, str] | None,
        now: str,
        suite: str,
    ) -> dict[str, Any]:
        """The credential over ``data``: its manifest binds the canonical ``request`` and the
        exact ``entry`` bytes (with the entry's ``pseudonyms``), dated ``now``, signed with
        ``suite`` (eddsa-jcs-2022 or eddsa-rdfc-2022)."""
        return self.issue_json(data, request, entry, pseudonyms, now, suite)[0]

    def issue_json(
        self,
        data: dict[str, Any],
        request: bytes,
        entry: bytes | None,
        pseudonyms: dict[str, str] | None,
        now: str,
        suite: str,
    ) -> tuple[dict[str, Any], bytes | None]:
        """:meth:`issue`, and for eddsa-jcs-2022 the credential's JSON text as well (its signed
        canonical bytes with the proof spliced in), so an answer need not encode it again."""
        hashed = dict(data)  # without the secrets it hands the caller, in data's order
        for name in SECRET_DATA_FIELDS:
            hashed.pop(name, None)
        plain = is_plain(hashed) and _plain_names(pseudonyms)
        data_bytes = encode_plain(hashed) if plain else canonicalize(hashed)
        subject: dict[str, Any] = {"type": "LeaseAnswer"}
        subject.update({name: data[name] for name in _SUBJECT_PARTS if name in data})
        if pseudonyms:
            subject["pseudonyms"] = pseudonyms
        subject["manifest"] = _manifest(data, data_bytes, request, entry)
        credential = _credential(self._head, now, subject)
        if suite != JCS_SUITE:
            return self._signer.sign(credential, suite, created=now), None
        subject_bytes = encode_plain(subject) if plain else canonicalize(subject)
        signer, (before, between, after) = self._signer, self._frame
        canonical = before + subject_bytes + between + signer.stamp_bytes(now) + after
        signed, proof = signer.sign_jcs_text(credential, canonical, now)
        if not plain:  # a float's RFC 8785 text may read back as another JSON type in Python
            return signed, None
        return signed, canonical[:-1] + b',"proof":' + proof + b"}"


_SUBJECT_PARTS = (*SUBJECT_FIELDS, "ledger", "error")  # in the subject's order


def _with_token(data_text: bytes, owner_token: str | None) -> bytes:
    """``data``'s JSON with a grant's owner token as its last member (the edge's wire form)."""
    if owner_token is None:
        return data_text
    comma = b"," if len(data_text) > 2 else b""
    return data_text[:-1] + comma + b'"ownerToken":' + dumps(owner_token) + b"}"


def _plain_names(pseudonyms: dict[str, str] | None) -> bool:
    """Pseudonyms are ASCII names to strings; anything else takes the canonicalizing path."""
    if not pseudonyms:
        return True
    if {*map(type, pseudonyms), *map(type, pseudonyms.values())} != {str}:
        return False
    return "".join(pseudonyms).isascii()


def _manifest(
    data: dict[str, Any], data_bytes: bytes, request: bytes, entry: bytes | None
) -> dict[str, Any]:
    ledger = _ledger_assertion(data, entry)
    assertions = [
        {"label": LABEL_REQUEST, "hash": digest(request)},
        {"label": LABEL_DATA, "hash": digest(data_bytes)},
        {"label": ledger[0], "hash": digest(ledger[1])},
    ]
    return {"claimGenerator": CLAIM_GENERATOR, "alg": "sha256", "assertions": assertions}


def _ledger_assertion(data: dict[str, Any], entry: bytes | None) -> tuple[str, bytes]:
    """The manifest's third assertion: the entry the call appended, or, for reads and
    refusals, the ledger state the answer was read from."""
    return (LABEL_ENTRY, entry) if entry is not None else (LABEL_STATE, state_bytes(data))


def _answerer(signer: Signer, frame: tuple[bytes, bytes, bytes]) -> Answerer:
    """The native envelope writer for ``signer``: the frame, the proof template for
    :data:`CONTEXTS`, and what :meth:`Issuer.issue_json` puts in a subject and its manifest."""
    return Answerer(
        frame=frame,
        proof=signer.jcs_template(CONTEXTS),
        sha256=hashlib.sha256,
        sign=signer.sign_bytes,
        secrets=SECRET_DATA_FIELDS,
        parts=_SUBJECT_PARTS,
        labels=(LABEL_REQUEST, LABEL_DATA),
        generator=CLAIM_GENERATOR,
    )


_SUBJECT, _VALID_FROM = "\ue000subject", "\ue000validFrom"  # placeholders split out below


def _credential_head(issuer: str) -> dict[str, Any]:
    """The credential's members fixed for an issuer, in the order the answer writes them."""
    return {
        "@context": CONTEXTS,
        "type": ["VerifiableCredential", "LeaseReceipt"],
        "issuer": issuer,
    }


def _credential(head: dict[str, Any], valid_from: str, subject: Any) -> dict[str, Any]:
    """The unsigned credential: ``head`` (shared values, as ``CONTEXTS`` always was), then its
    ``validFrom`` and its subject."""
    credential = head.copy()
    credential["validFrom"] = valid_from
    credential["credentialSubject"] = subject
    return credential


def _credential_frame(issuer: str) -> tuple[bytes, bytes, bytes]:
    """The credential's canonical bytes around its subject and its ``validFrom``: every other
    member is fixed for an issuer, and RFC 8785 sorts them, so the frame is made once."""
    whole = canonicalize(_credential(_credential_head(issuer), _VALID_FROM, _SUBJECT))
    before, rest = whole.split(canonicalize(_SUBJECT))
    between, after = rest.split(canonicalize(_VALID_FROM))
    return before, between, after
