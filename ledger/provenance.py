"""The `_provenance` credential of every answer (DESIGN §5); issuing side.

A VC 2.0 credential, issued by the signing key's did:key, whose subject states the answer (op,
outcome, resource, holder, fencing token, expiry, ledger position, and the ledger pseudonyms of
the names) plus a C2PA-style manifest: one SHA-256 per assertion over the canonical request
(secrets removed), the canonical `data` (secrets removed) and the ledger entry the call appended
(or, for reads and refusals, the ledger state the answer was read from). The receipt format is
fixed in docs/decisions/0002-receipt-format.md; ``verify/receipt.py`` is the verifying half.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from ledger.answers import redact
from ledger.signer import Signer
from verify.errors import VerificationError
from verify.jcs import canonicalize
from verify.receipt import (
    CONTEXTS,
    LABEL_DATA,
    LABEL_ENTRY,
    LABEL_REQUEST,
    LABEL_STATE,
    SECRET_REQUEST_FIELDS,
    SUBJECT_FIELDS,
    canonical_data,
    state_bytes,
)

CLAIM_GENERATOR = "tenure/0.1.0"


def digest(data: bytes) -> str:
    """Base64 SHA-256, as the manifest's hashes are written."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def canonical_request(method: str, path: str, body: bytes | None) -> bytes:
    """The request as the manifest hashes it: secrets removed, results redacted. A body that is
    not I-JSON (not JSON at all, NaN, an integer past 2**53, a lone surrogate) is represented
    by the SHA-256 of its bytes instead, and so is one nested too deeply to walk."""
    view: dict[str, Any] = {"method": method, "path": path, "body": None}
    if body:
        try:
            view["body"] = _without_secrets(json.loads(body))
            return canonicalize(view)
        except (ValueError, VerificationError, RecursionError):
            view["body"] = {"unparsedSha256": hashlib.sha256(body).hexdigest()}
    return canonicalize(view)


def _without_secrets(parsed: Any) -> Any:
    if not isinstance(parsed, dict):
        return parsed
    kept = {k: v for k, v in parsed.items() if k not in SECRET_REQUEST_FIELDS}
    if "result" in kept:
        kept["result"] = redact(kept["result"])
    return kept


class Issuer:
    """Issues the Verifiable Credential (``_provenance``) over every answer (DESIGN §5)."""

    def __init__(self, signer: Signer) -> None:
        self.signer = signer

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
        subject: dict[str, Any] = {"type": "LeaseAnswer"}
        subject.update((name, data[name]) for name in SUBJECT_FIELDS if name in data)
        if "ledger" in data:
            subject["ledger"] = data["ledger"]
        if "error" in data:
            subject["error"] = data["error"]
        if pseudonyms:
            subject["pseudonyms"] = pseudonyms
        subject["manifest"] = self._manifest(data, request, entry)
        credential = {
            "@context": CONTEXTS,
            "type": ["VerifiableCredential", "LeaseReceipt"],
            "issuer": self.signer.did,
            "validFrom": now,
            "credentialSubject": subject,
        }
        return self.signer.sign(credential, suite, created=now)

    def _manifest(
        self, data: dict[str, Any], request: bytes, entry: bytes | None
    ) -> dict[str, Any]:
        ledger = (LABEL_ENTRY, entry) if entry is not None else (LABEL_STATE, state_bytes(data))
        assertions = [
            {"label": LABEL_REQUEST, "hash": digest(request)},
            {"label": LABEL_DATA, "hash": digest(canonical_data(data))},
            {"label": ledger[0], "hash": digest(ledger[1])},
        ]
        return {"claimGenerator": CLAIM_GENERATOR, "alg": "sha256", "assertions": assertions}
