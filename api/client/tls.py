"""How the client checks a server's TLS certificate, and shows its own for mutual TLS.

``cacert`` trusts a private CA (a self-signed server's, docs/operations.md "TLS") instead of the
system's; ``cert`` is the client's certificate and key files for a server that asks for one.
"""

from __future__ import annotations

import ssl
from pathlib import Path

CertFiles = tuple[str | Path, str | Path]
"""A client certificate's PEM file and its private key's PEM file."""


def tls_verify(cacert: str | Path | None, cert: CertFiles | None) -> ssl.SSLContext | bool:
    """httpx's ``verify``: the system's CAs (True) unless a CA file or a client cert is given;
    raises ``OSError``/``ssl.SSLError`` for a file that cannot be read or used."""
    if cacert is None and cert is None:
        return True
    context = ssl.create_default_context(cafile=None if cacert is None else str(cacert))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return context
