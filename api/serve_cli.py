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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.database_option import ledger_location
from api.serve_options import DefaultsShown, add_serve_options, option_problem, settings
from api.tls_options import uvicorn_tls


def add_parser(commands: Any) -> None:
    """Add ``serve`` to the ``tenure`` subcommands."""
    serve = commands.add_parser(
        "serve",
        help="run the HTTP server",
        formatter_class=DefaultsShown,
        epilog="Exit codes: 0 stopped by SIGTERM/SIGINT; 1 a worker failed to start; 2 bad"
        " usage, or the ledger or keys cannot be used; 3 the address cannot be listened on.",
    )
    add_serve_options(serve)


def serve_main(args: argparse.Namespace, argv: list[str]) -> int:
    """Check the options, the address and the ledger, then serve with one or several
    processes."""
    from api import workers

    problem = option_problem(args)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    if args.fd is not None:  # a worker of `--workers N`: the parent set everything up
        workers.die_with_parent(args.parent)
        return _serve_worker(args, workers.Report(args.ready))
    try:
        sock = workers.listen(args.host, args.port)
    except OSError as error:
        print(f"tenure: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 3
    with sock:
        problem = _storage_problem(args, args.keys)
        if problem is not None:
            print(f"tenure: {problem}", file=sys.stderr)
            return 2
        url = workers.url_of(args.host, sock, https=args.tls_cert is not None)
        if args.workers == 1:
            return _serve_one(args, sock, lambda: workers.announce(url, 1))
        return workers.Workers(_without_workers(argv), sock, args.workers, url).run()


def _serve_worker(args: argparse.Namespace, report: Any) -> int:
    """A worker of several: serve the inherited socket, telling the parent once it is ready,
    or why it could not start."""
    try:
        _serve_one(args, socket.socket(fileno=args.fd), report.ready)
    except BaseException as error:
        report.failed(error)
        raise
    report.failed(None)  # a start-up that returned without serving (its log says why)
    return 0


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


def _serve_one(args: argparse.Namespace, sock: socket.socket, ready: Callable[[], None]) -> int:
    """One process serving HTTP on a socket (its own, or a worker's inherited one); ``ready``
    is called once it serves."""
    import uvicorn

    from api.accel.hot_protocol import protocol_for
    from api.app import create_app
    from api.http_guard import MAX_HEADER_BYTES_ENV, READ_TIMEOUT_ENV

    os.environ[READ_TIMEOUT_ENV] = str(args.read_timeout)
    os.environ[MAX_HEADER_BYTES_ENV] = str(args.max_header_bytes)
    app = create_app(settings(args))
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http=protocol_for(app),
        log_level=args.log_level,
        access_log=False,  # the app writes it, buffered (api/logs.py AccessLog)
        timeout_graceful_shutdown=5,
        **uvicorn_tls(args),
    )
    server = _server(config, args)
    _call_when_started(server, ready)
    server.run(sockets=[sock])
    return 0


def _call_when_started(server: Any, ready: Callable[[], None]) -> None:
    """Call ``ready`` when uvicorn's start-up (the app's lifespan and the listener) is done."""
    startup = server.startup

    async def started(sockets: list[socket.socket] | None = None) -> None:
        await startup(sockets=sockets)
        if server.started:
            ready()

    server.startup = started


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
    from ledger.backends import open_membership, open_storage
    from ledger.keys.keyring import (
        KeyFileError,
        keys_fingerprint,
        load_or_create_secret,
        signing_keys,
    )
    from ledger.lease.calls import now_ms
    from ledger.rotation import refuse_retired
    from ledger.storage import StorageError

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
    if args.database is None:
        from ledger.backends import claim_keys

        try:
            claim_keys(args.data, keys_fingerprint(secret))
        except (OSError, ValueError) as error:
            return f"cannot serve the ledger in {args.data}: {error}"
    else:
        try:  # a node with another keys folder, or an out-of-date one, is refused here
            open_membership(args.database, keys_fingerprint(secret)).close()
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
    from ledger.backends import open_storage
    from ledger.keys.keyring import KeyFileError, load_or_create_names_key
    from ledger.keys.names import NameCodec
    from ledger.storage import StorageError

    try:
        names = NameCodec(load_or_create_names_key(keys))
    except (OSError, KeyFileError) as error:
        return f"cannot use the key folder {keys}: {error}"
    try:
        open_storage(ledger_location(args), names=names).close()
    except (OSError, StorageError) as error:
        return f"cannot open the ledger's names: {error}"
    return None
