"""The options of `tenure serve`, and their checks before anything starts.

Every option is checked in the parent, before a folder is made, a socket bound or a worker
started: a bad one is exit 2 with a message naming it. The server's own settings are checked
by building them here once (``api/settings.py``), so that the same rules hold for a flag and
for its ``TENURE_*`` environment variable.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.database_option import add_database_option
from api.tls_options import add_serve_tls_options, serve_tls_problem

if TYPE_CHECKING:
    from api.settings import Settings

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
OPTION_OF_SETTING = {
    "data_dir": "--data",
    "database": "--database",
    "keys_dir": "--keys",
    "rate_limit": "--rate-limit",
    "ttl_max_seconds": "--ttl-max",
    "lifecycle_seconds": "--lifecycle",
    "origin": "--origin",
    "checkpoint_interval": "--checkpoint-interval",
    "witnesses": "--witness",
}
"""The flag that sets each setting; the others come only from ``TENURE_*`` variables."""


class DefaultsShown(argparse.HelpFormatter):
    """Each option's help ends with its default, where there is one to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


def add_serve_options(serve: argparse.ArgumentParser) -> None:
    """Add the options of ``tenure serve`` (``--help`` shows each one's default)."""
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=_port, default=8080, help="TCP port (0: any free one)")
    serve.add_argument("--data", type=Path, default=Path("data"), help="ledger folder")
    add_database_option(serve)
    serve.add_argument("--keys", type=Path, default=Path("keys"), help="key folder")
    serve.add_argument("--require-api-key", action="store_true", help="refuse callers without one")
    serve.add_argument("--no-anonymous", action="store_true", help="turn the anonymous tenant off")
    serve.add_argument("--rate-limit", type=float, default=10_000.0, help="requests/s per tenant")
    serve.add_argument("--ttl-max", type=int, default=3600, help="largest ttlSeconds (≤ 86400)")
    serve.add_argument("--lifecycle", type=int, default=86400, help="lifecycle in seconds")
    serve.add_argument(
        "--checkpoint-interval", type=float, default=10.0, help="seconds between checkpoints"
    )
    serve.add_argument("--origin", help="checkpoint origin line (default: unique per log)")
    serve.add_argument(
        "--witness",
        action="append",
        metavar="URL=VKEY",
        help="a tlog-witness to push checkpoints to, and its cosigner key (repeatable; none by"
        " default)",
    )
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS, help="log level")
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="seconds a request may take to arrive whole; then 408",
    )
    serve.add_argument(
        "--max-header-bytes",
        type=int,
        default=16 * 1024,
        help="largest request line plus headers; larger gets 431",
    )
    add_serve_tls_options(serve)
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes sharing the ledger (default: one per core on SQLite, one on"
        " PostgreSQL; 1 serves in-process)",
    )
    serve.add_argument("--fd", type=int, help=argparse.SUPPRESS)  # a worker's inherited socket
    serve.add_argument("--parent", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--shares", type=int, help=argparse.SUPPRESS)  # the workers' counts
    serve.add_argument("--slot", type=int, help=argparse.SUPPRESS)  # this worker's among them
    serve.add_argument("--ready", type=int, help=argparse.SUPPRESS)  # a worker's pipe to its parent


def _port(value: str) -> int:
    """argparse type: a TCP port number."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0..65535, not {port}")
    return port


def option_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, naming the option, or None (``--workers`` defaulted)."""
    if not args.read_timeout > 0:
        return f"--read-timeout must be > 0, not {args.read_timeout}"
    if args.max_header_bytes < 1024:
        return f"--max-header-bytes must be at least 1024, not {args.max_header_bytes}"
    if args.workers is None:
        args.workers = 1 if args.database else (os.cpu_count() or 1)
    if args.workers < 1:
        return f"--workers must be at least 1, not {args.workers}"
    try:
        socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        return f"--host {args.host!r} is not an address to listen on: {error}"
    return serve_tls_problem(args) or _settings_problem(args)


def _settings_problem(args: argparse.Namespace) -> str | None:
    from pydantic import ValidationError

    try:
        settings(args)
    except ValidationError as error:
        return "; ".join(_named(problem) for problem in error.errors())
    return None


def _named(problem: Any) -> str:
    """One setting's problem, named as the operator set it: the flag, or else the variable."""
    field = str(problem["loc"][0]) if problem["loc"] else "settings"
    name = OPTION_OF_SETTING.get(field, f"TENURE_{field.upper()}")
    return f"{name}: {problem['msg']} (got {problem['input']!r})"


def settings(args: argparse.Namespace) -> Settings:
    """The server's settings from the options (and ``TENURE_*`` variables); raises
    ``pydantic.ValidationError`` for a value out of range."""
    from api.settings import Settings

    return Settings(
        data_dir=args.data,
        database=args.database,
        keys_dir=args.keys,
        require_api_key=args.require_api_key,
        allow_anonymous=not args.no_anonymous,
        rate_limit=args.rate_limit,
        ttl_max_seconds=args.ttl_max,
        lifecycle_seconds=args.lifecycle,
        origin=args.origin,
        checkpoint_interval=args.checkpoint_interval,
        witnesses=args.witness or [],
        access_log=args.log_level in ("trace", "debug", "info"),
    )
