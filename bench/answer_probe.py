"""What would an answer made by native code buy? A probe beside the default server, not a design.

Not a test, and nothing of it is in the server: prints figures. It measured the ceiling of
assembling the credential in native code before ``native/`` was built (decisions/0015). Its
servers load ``bench/probe_site/sitecustomize.py``: each worker answers every grant after its
first with that grant's bytes, still paying the signature and hashes native code would.
``--conservative`` also pays base58 and orjson in Python; ``--python`` is the default server with
the native path off. Alternated with the default ``tenure serve`` under ``bench/vs_etcd.py``'s
load, printed by its ``show``; what the probe pays and skips: docs/performance.md.

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
        from ledger.lease import provenance

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
        signature = request.app.state.edge.issuer.signer.sign_bytes(message)
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
