"""The verifier's one error hierarchy.

Every check in `verify/` raises a subclass of :class:`VerificationError`; callers that want a
result object instead use the result-returning variants, which catch exactly this root.
"""

from __future__ import annotations

import base64


class VerificationError(Exception):
    """Root of every verification failure."""


class MalformedInput(VerificationError):
    """The input cannot be parsed into what the check needs (bad base64, wrong shape, ...)."""


def b64(digest: bytes) -> str:
    """A hash as messages print it: standard base64, as the API and the ledger do."""
    return base64.b64encode(digest).decode()


class ProofError(VerificationError):
    """A Merkle inclusion or consistency proof does not verify (RFC 9162 §2.1.3, §2.1.4)."""


class RootMismatch(ProofError):
    """A proof recomputes a root other than the one expected."""

    def __init__(self, expected: bytes, computed: bytes) -> None:
        expected_b64, computed_b64 = b64(expected), b64(computed)
        super().__init__(f"root mismatch: expected {expected_b64}, computed {computed_b64}")
        self.expected = expected
        self.computed = computed


class SignatureError(VerificationError):
    """A signature (Data Integrity proof or signed note) does not verify."""


class UntrustedKey(VerificationError):
    """The signer's key is not among the trusted keys."""


class ManifestError(VerificationError):
    """A manifest assertion is missing, undeclared, or hashes to another value."""


class UnknownContext(MalformedInput):
    """A JSON-LD context IRI is neither bundled nor supplied; contexts are never fetched."""


class UndefinedTerm(MalformedInput):
    """A JSON-LD term or type is not defined by the document's contexts (RDFC would drop it)."""
