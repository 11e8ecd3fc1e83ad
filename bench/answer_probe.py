"""What does an answer made by native code buy? A probe, not a design (issue 10).

Not a test, and nothing of it is in the server: prints figures. docs/performance.md (tenth
round) named the credential's assembly in native code as the next lever; this measured its
ceiling beside the default ``tenure serve`` before it was built (``native/``, decisions/0015),
alternated, with ``bench/vs_etcd.py``'s load (wrk, fresh acquires under an API key). With
``--python`` the probe is the default server with the native path off (the Python path writes
every answer): the built path's own before/after.

The probe is an unchanged ``tenure serve`` whose processes load
``bench/probe_site/sitecustomize.py``: the lease route's ``respond`` then answers every grant
after a worker's first with that first grant's bytes (wrk reads only the status), but still
pays what native code would have to: the Ed25519 signature over two SHA-256 digests (of the
~2.6 KB envelope and a 300-byte part of it) and three more SHA-256s (the request body, 600 and
500 bytes). The credential's Python around them — the request's canonical bytes, the plainness
walks, the manifest, the subject and its frame, the proof's dicts, base58, the envelope — is
skipped. With ``--conservative`` the probe also pays base58 in Python and three orjson
encodings of the answer's data: more than native code would.

Each run is driven and printed by ``bench/vs_etcd.py``'s own ``wrk`` and ``show``: rate, p99,
server CPU per request, the machine's idle share and — for the probe's runs too — the ledger
lock's figures.

    .venv/bin/python bench/answer_probe.py [--duration 10] [--rounds 5] [--conservative | --python]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

MODE_ENV = "TENURE_PROBE_ANSWER"
"""Set (to ``ceiling``, ``conservative`` or ``python``) in the probe server's environment."""


def hook_workers() -> None:
    """In a probe server's process (``bench/probe_site/sitecustomize.py``): replace
    ``api.responses.respond`` before the routes import it — or, for ``--python``, turn the
    native answer path off before the issuer is made."""
    if os.environ.get(MODE_ENV) == "python":
        from ledger import provenance

        provenance.HAVE_NATIVE = False
        return
    from api import responses
    from verify.jcs import encode_plain
    from verify.multikey import multibase_encode

    real = responses.respond
    conservative = os.environ.get(MODE_ENV) == "conservative"
    first: list[bytes] = []

    def respond(
        request: Any,
        data: dict[str, Any],
        status: int,
        headers: dict[str, str] | None = None,
        *rest: Any,
    ) -> Any:
        body = rest[1] if len(rest) > 1 else None  # (cited, body, suite, document)
        if status != 201 or body is None or not first:  # a grant of the lease route: it has a body
            response = real(request, data, status, headers, *rest)
            if status == 201 and body is not None:
                first.append(bytes(response.body))
            return response
        envelope = first[0]
        message = hashlib.sha256(envelope[:300]).digest() + hashlib.sha256(envelope).digest()
        signature = request.app.state.issuer.signer.sign_bytes(message)
        for part in (body, envelope[:600], envelope[:500]):
            hashlib.sha256(part).digest()
        if conservative:
            multibase_encode(signature)
            for _ in range(3):
                encode_plain(data)
        return responses.answer_response(envelope, status, headers)

    setattr(responses, "respond", respond)  # noqa: B010 (the routes import it afterwards)


def main() -> int:
    from vs_etcd import alternate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--conservative", action="store_true", help="base58 and encodings too")
    mode.add_argument("--python", action="store_true", help="the probe: no native answers")
    args = parser.parse_args()
    args.threads = 2  # vs_etcd.wrk's
    chosen = "python" if args.python else "conservative" if args.conservative else "ceiling"
    probe = {
        MODE_ENV: chosen,
        "PYTHONPATH": f"{ROOT / 'bench' / 'probe_site'}{os.pathsep}{ROOT / 'bench'}",
    }
    alternate(args, "probe", probe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
