"""Run the independent Node.js verifier (tests/interop/verify.mjs) from Python tests.

The Node side is Digital Bazaar's ``@digitalbazaar/vc`` with the eddsa-jcs-2022 and
eddsa-rdfc-2022 cryptosuites (tests/interop/README.md). It works offline: it is given
the JSON-LD contexts here — tenure's bundled ones (``verify.jsonld.CONTEXT_FILES``) plus
the caller's — and resolves only the credential issuer's did:key and ``did_documents``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verify.jsonld import bundled_contexts

INTEROP_DIR = Path(__file__).resolve().parent / "interop"
VERIFIER = INTEROP_DIR / "verify.mjs"
NODE_TIMEOUT = 120  # seconds, for the whole batch
SKIP_REASON = (
    "the Node.js interop verifier is not installed: needs `node` on PATH and "
    "`cd tests/interop && npm install` (scripts/test.sh runs it when npm is available)"
)


def node_available() -> bool:
    """True if ``node`` is on PATH and the interop node_modules are installed."""
    installed = (INTEROP_DIR / "node_modules" / "@digitalbazaar" / "vc").is_dir()
    return shutil.which("node") is not None and installed


def run_node_verifier(
    credentials: list[dict[str, Any]],
    contexts: Mapping[str, Any] | None = None,
    *,
    did_documents: Mapping[str, Any] | None = None,
    require_issuer_match: bool = True,
) -> list[dict[str, Any]]:
    """Verify each credential in Node; one ``{verified, cryptosuite, error}`` per credential.

    ``contexts`` are JSON-LD contexts ``{IRI: document}`` added to tenure's bundled ones.
    ``did_documents`` (``{DID: document}``) are controller documents besides the
    issuer's did:key, which Node builds itself. ``require_issuer_match=False`` drops the
    check that the proof's key is controlled by the credential's ``issuer`` (the W3C
    vectors name an https issuer but sign with a did:key).
    Raises RuntimeError if the verifier crashes or prints something unexpected.
    """
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    request = {
        "credentials": credentials,
        "contexts": {**bundled_contexts(), **(contexts or {})},
        "didDocuments": dict(did_documents or {}),
        "requireIssuerMatch": require_issuer_match,
    }
    completed = subprocess.run(
        [node, VERIFIER.name],
        cwd=INTEROP_DIR,
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"node verify.mjs exited {completed.returncode}:\n{completed.stderr.strip()}"
        )
    try:
        results: list[dict[str, Any]] = json.loads(completed.stdout)["results"]
    except (ValueError, KeyError, TypeError) as e:
        raise RuntimeError(f"unexpected verifier output: {completed.stdout!r}") from e
    if len(results) != len(credentials):
        raise RuntimeError(f"{len(credentials)} credentials, {len(results)} results")
    return results
