"""The `tenure` command: serve, apikey, and the operator's tools.

Exit codes: 0 success, 1 the operation failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from api import admin_cli, monitor
from api.database_option import add_database_option, ledger_location
from api.lease_run import add_lease_parser, lease_main, split_command
from api.mcp_cli import add_mcp_parser, mcp_main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenure",
        description="A lease service with fencing tokens and a Merkle-sealed ledger.",
        epilog="Exit codes: 0 success, 1 failure, 2 bad usage"
        " (`tenure lease run` has its own: see its --help).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
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
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="seconds a request may take to arrive whole; then 408 (default 10)",
    )
    serve.add_argument(
        "--max-header-bytes",
        type=int,
        default=16 * 1024,
        help="largest request line plus headers; larger gets 431 (default 16384)",
    )
    admin_cli.add_parsers(commands)
    add_lease_parser(commands)
    add_mcp_parser(commands)
    monitor.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "apikey":
        return admin_cli.apikey_main(args)
    if args.command == "keys":
        return admin_cli.keys_main(args)
    if args.command == "export":
        return admin_cli.export_main(args)
    if args.command == "audit":
        return admin_cli.audit_main(args)
    if args.command == "lease":
        return lease_main(args, command)
    if args.command == "mcp":
        return mcp_main(args)
    if args.command == "monitor":
        return monitor.run(args)
    return 2


def _serve(args: argparse.Namespace) -> int:
    import os

    import uvicorn

    from api.app import create_app
    from api.http_guard import MAX_HEADER_BYTES_ENV, READ_TIMEOUT_ENV, GuardedHttpToolsProtocol
    from api.settings import Settings

    if not 1 <= args.ttl_max <= 86400:
        print("tenure: --ttl-max must be 1..86400", file=sys.stderr)
        return 2
    if not (args.read_timeout > 0 and args.max_header_bytes >= 1024):
        print("tenure: --read-timeout must be > 0, --max-header-bytes >= 1024", file=sys.stderr)
        return 2
    problem = _storage_problem(args, args.keys)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    settings = Settings(
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
    )
    os.environ[READ_TIMEOUT_ENV] = str(args.read_timeout)
    os.environ[MAX_HEADER_BYTES_ENV] = str(args.max_header_bytes)
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        loop="uvloop",
        http=GuardedHttpToolsProtocol,
        log_level=args.log_level,
        timeout_graceful_shutdown=5,
    )
    return 0


def _storage_problem(args: argparse.Namespace, keys: Path) -> str | None:
    """Why the ledger or the keys cannot be written, said before the server starts (a read-only
    folder is an operator's mistake, not a traceback)."""
    from ledger.keyring import load_or_create_secret
    from ledger.storage import StorageError, open_storage

    try:
        storage = open_storage(ledger_location(args), exclusive=True)
        try:
            storage.check_writable()
        finally:
            storage.close()
    except (OSError, StorageError) as error:
        if args.database is not None:
            return f"cannot use the ledger database: {error}"
        return f"cannot write the ledger in {args.data}: {error} (it needs a writable folder)"
    try:
        load_or_create_secret(keys)
    except OSError as error:
        return f"cannot use the key folder {keys}: {error}"
    return None
