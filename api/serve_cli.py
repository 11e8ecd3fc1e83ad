"""`tenure serve`: its options, the checks before it starts, and one or several worker processes.

With ``--workers N`` (default: one per core) the parent migrates the ledger and creates the keys
once, binds the socket and runs N workers (``api/workers.py``) that share the ledger
(docs/decisions/0006); ``--workers 1`` serves in-process.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

from api.database_option import add_database_option, ledger_location


def add_parser(commands: Any) -> None:
    """Add ``serve`` to the ``tenure`` subcommands."""
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


def serve_main(args: argparse.Namespace, argv: list[str]) -> int:
    """Check the options and the ledger, then serve with one or several processes."""
    from api import workers

    problem = _option_problem(args)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    if args.fd is not None:  # a worker of `--workers N`: the parent set everything up
        workers.die_with_parent(args.parent)
        return _serve_one(args, socket.socket(fileno=args.fd))
    problem = _storage_problem(args, args.keys)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    if args.workers == 1:
        return _serve_one(args, None)
    sock = workers.listen(args.host, args.port)
    return workers.Workers(_without_workers(argv), sock, args.workers).run()


def _option_problem(args: argparse.Namespace) -> str | None:
    if not 1 <= args.ttl_max <= 86400:
        return "--ttl-max must be 1..86400"
    if not (args.read_timeout > 0 and args.max_header_bytes >= 1024):
        return "--read-timeout must be > 0, --max-header-bytes >= 1024"
    if args.workers is None:
        args.workers = 1 if args.database else (os.cpu_count() or 1)
    if args.workers < 1:
        return "--workers must be at least 1"
    return None


def _without_workers(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip or arg.startswith("--workers="):
            skip = False
            continue
        skip = arg == "--workers"
        if not skip:
            kept.append(arg)
    return [*kept, "--workers", "1"]


def _serve_one(args: argparse.Namespace, sock: socket.socket | None) -> int:
    """One process serving HTTP: on its own socket, or a worker's inherited one."""
    import uvicorn

    from api.app import create_app
    from api.http_guard import MAX_HEADER_BYTES_ENV, READ_TIMEOUT_ENV, GuardedHttpToolsProtocol
    from api.settings import Settings

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
        access_log=args.log_level in ("trace", "debug", "info"),
    )
    os.environ[READ_TIMEOUT_ENV] = str(args.read_timeout)
    os.environ[MAX_HEADER_BYTES_ENV] = str(args.max_header_bytes)
    config = uvicorn.Config(
        create_app(settings),
        host=args.host,
        port=args.port,
        loop="uvloop",
        http=GuardedHttpToolsProtocol,
        log_level=args.log_level,
        access_log=False,  # the app writes it, buffered (api/logs.py AccessLog)
        timeout_graceful_shutdown=5,
    )
    server = _server(config, args)
    server.run(sockets=None if sock is None else [sock])
    return 0


def _server(config: Any, args: argparse.Namespace) -> Any:
    """uvicorn's server; a worker of several takes its connections evenly (``api/balance.py``)."""
    import uvicorn

    if args.shares is None or args.slot is None:
        return uvicorn.Server(config)
    from api.balance import BalancedServer, Shares

    return BalancedServer(config, Shares(args.shares), args.slot)


def _storage_problem(args: argparse.Namespace, keys: Path) -> str | None:
    """Why the ledger or the keys cannot be written, said before the server starts (a read-only
    folder is an operator's mistake, not a traceback)."""
    from ledger.calls import now_ms
    from ledger.keyring import KeyFileError, keys_fingerprint, load_or_create_secret, signing_keys
    from ledger.membership import open_membership
    from ledger.rotation import refuse_retired
    from ledger.storage import StorageError, open_storage

    try:
        storage = open_storage(ledger_location(args))
        try:
            storage.check_writable()
        finally:
            storage.close()
    except (OSError, StorageError) as error:
        if args.database is not None:
            return f"cannot use the ledger database: {error}"
        return f"cannot write the ledger in {args.data}: {error} (it needs a writable folder)"
    try:
        secret = load_or_create_secret(keys)
        signing_keys(keys, now_ms())  # generated once here, before any worker starts
    except (OSError, KeyFileError) as error:
        return f"cannot use the key folder {keys}: {error}"
    if args.database is not None:
        try:  # a node with another keys folder, or an out-of-date one, is refused here
            open_membership(args.data, args.database, keys_fingerprint(secret)).close()
            storage = open_storage(args.database)
            try:
                refuse_retired(storage, signing_keys(keys, now_ms())[-1], now_ms())
            finally:
                storage.close()
        except StorageError as error:
            return f"cannot join the ledger's nodes: {error}"
    return _names_problem(args, keys)


def _names_problem(args: argparse.Namespace, keys: Path) -> str | None:
    """Open the ledger with the names key once, before any worker starts: an older ledger's
    names are sealed here (docs/decisions/0010), and another key than the one that sealed
    them is refused."""
    from ledger.keyring import KeyFileError, load_or_create_names_key
    from ledger.names import NameCodec
    from ledger.storage import StorageError, open_storage

    try:
        names = NameCodec(load_or_create_names_key(keys))
    except (OSError, KeyFileError) as error:
        return f"cannot use the key folder {keys}: {error}"
    try:
        open_storage(ledger_location(args), names=names).close()
    except (OSError, StorageError) as error:
        return f"cannot open the ledger's names: {error}"
    return None
