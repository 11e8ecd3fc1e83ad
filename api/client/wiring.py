"""What ``Client`` and ``AsyncClient`` share around httpx: the sans-IO core and the httpx
client's options, built from the same constructor arguments, and the core's view of what
httpx brought back (a reply, or no answer at all)."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import httpx

from api.client.core import Core, NetworkError, Reply, RetryPolicy, headers
from api.client.tls import CertFiles, tls_verify
from api.client.trust import Trust, witness_policy


class HttpOptions(TypedDict):
    """The keyword arguments of ``httpx.Client`` and ``httpx.AsyncClient`` for one client."""

    base_url: str
    headers: dict[str, str]
    verify: ssl.SSLContext | bool


def core_for(
    trust: Trust | None,
    timeout: float,
    retry: RetryPolicy | None,
    verify: bool,
    witnesses: Sequence[str],
    witness_threshold: int | None,
) -> Core:
    """The core of one client: the keys it trusts, its timeout and retries, and the witnesses
    a checkpoint needs (ValueError for a trust or witness policy that names nothing usable)."""
    core = Core(trust, timeout, retry or RetryPolicy(), verify)
    core.witnesses = witness_policy(witnesses, witness_threshold)
    return core


def http_options(
    url: str,
    api_key: str | None,
    namespace: str | None,
    cacert: str | Path | None,
    cert: CertFiles | None,
) -> HttpOptions:
    """Where one client's calls go, the headers each carries, and how the server's certificate
    is checked (``OSError``/``ssl.SSLError`` for a file that cannot be read or used)."""
    return HttpOptions(
        base_url=url, headers=headers(api_key, namespace), verify=tls_verify(cacert, cert)
    )


def reply_of(response: httpx.Response) -> Reply:
    """The core's view of an HTTP response whose body has been read."""
    return Reply(response.status_code, response.headers, response.content)


def no_answer(error: httpx.TransportError) -> NetworkError:
    """The core's view of a call that got no answer (refused, reset, timed out)."""
    return NetworkError(f"{type(error).__name__}: {error}")
