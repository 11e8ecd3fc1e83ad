"""TLS options: ``tenure serve --tls-cert/--tls-key/--tls-client-ca``, and the ``--cacert``,
``--cert`` and ``--key`` of the commands that call a server.

Every file is read and loaded here, before a server starts or a call is made: a missing,
unreadable or unusable one is exit 2 naming its option (docs/operations.md "TLS").
"""

from __future__ import annotations

import argparse
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.client.tls import CertFiles


def add_serve_tls_options(serve: argparse.ArgumentParser) -> None:
    """``--tls-cert``, ``--tls-key`` (both or neither) and ``--tls-client-ca`` (mutual TLS)."""
    serve.add_argument("--tls-cert", type=Path, metavar="FILE", help="serve HTTPS: PEM chain")
    serve.add_argument("--tls-key", type=Path, metavar="FILE", help="its private key (PEM)")
    serve.add_argument(
        "--tls-client-ca",
        type=Path,
        metavar="FILE",
        help="mutual TLS: refuse clients without a certificate signed by this CA (PEM)",
    )


def serve_tls_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the TLS options, naming the option, or None."""
    cert, key, client_ca = args.tls_cert, args.tls_key, args.tls_client_ca
    if (cert is None) != (key is None):
        return "--tls-cert and --tls-key go together: give both, or neither"
    if cert is None:
        return "--tls-client-ca needs --tls-cert and --tls-key" if client_ca else None
    for option, path in (("--tls-cert", cert), ("--tls-key", key), ("--tls-client-ca", client_ca)):
        problem = _unreadable(option, path)
        if problem is not None:
            return problem
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        return f"--tls-cert/--tls-key: not a certificate and its private key: {error}"
    if client_ca is not None:
        try:
            context.load_verify_locations(cafile=client_ca)
        except (OSError, ssl.SSLError) as error:
            return f"--tls-client-ca: not a PEM CA certificate: {error}"
    return None


def uvicorn_tls(args: argparse.Namespace) -> dict[str, Any]:
    """uvicorn.Config's TLS arguments for the checked options (nothing for plain HTTP)."""
    if args.tls_cert is None:
        return {}
    tls: dict[str, Any] = {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key}
    if args.tls_client_ca is not None:
        tls.update(ssl_ca_certs=args.tls_client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return tls


def add_client_tls_options(command: argparse.ArgumentParser, mutual: bool = True) -> None:
    """``--cacert`` (a private CA to trust) and, if ``mutual``, ``--cert``/``--key``."""
    command.add_argument("--cacert", type=Path, metavar="FILE", help="trust this CA (PEM)")
    if mutual:
        command.add_argument("--cert", type=Path, metavar="FILE", help="client cert (PEM)")
        command.add_argument("--key", type=Path, metavar="FILE", help="its private key (PEM)")
    else:
        command.set_defaults(cert=None, key=None)


def cert_files(args: argparse.Namespace) -> CertFiles | None:
    """The client certificate and key files of ``--cert``/``--key``, if given."""
    return None if args.cert is None else (args.cert, args.key)


def client_tls_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--cacert``/``--cert``/``--key``, naming the option, or None."""
    from api.client.tls import tls_verify

    if (args.cert is None) != (args.key is None):
        return "--cert and --key go together: give both, or neither"
    for option, path in (("--cacert", args.cacert), ("--cert", args.cert), ("--key", args.key)):
        problem = _unreadable(option, path)
        if problem is not None:
            return problem
    try:
        tls_verify(args.cacert, None)
    except (OSError, ssl.SSLError) as error:
        return f"--cacert: not a PEM CA certificate: {error}"
    try:
        tls_verify(None, cert_files(args))
    except (OSError, ssl.SSLError) as error:
        return f"--cert/--key: not a certificate and its private key: {error}"
    return None


def _unreadable(option: str, path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        with path.open("rb"):
            return None
    except OSError as error:
        return f"{option}: cannot read {path}: {error.strerror or error}"
