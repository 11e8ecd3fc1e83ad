"""The `tenure` command: serve, apikey, and the operator's tools.

Exit codes: 0 success, 1 the operation failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

from api import monitor
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
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes sharing the ledger (default: one per core; 1 serves in-process)",
    )
    serve.add_argument("--fd", type=int, help=argparse.SUPPRESS)  # a worker's inherited socket
    serve.add_argument("--parent", type=int, help=argparse.SUPPRESS)
    keys = commands.add_parser("keys", help="show or rotate the signing key")
    key_actions = keys.add_subparsers(dest="action", required=True)
    for action, text in (("show", "print the active key"), ("rotate", "add a new signing key")):
        sub = key_actions.add_parser(action, help=text)
        sub.add_argument("--keys", type=Path, default=Path("keys"))
    apikey = commands.add_parser("apikey", help="manage API keys")
    apikey_actions = apikey.add_subparsers(dest="action", required=True)
    create = apikey_actions.add_parser("create", help="print a new API key once; store its hash")
    create.add_argument("name", help="the tenant the key acts for")
    create.add_argument("--data", type=Path, default=Path("data"))
    export = commands.add_parser("export", help="write the ledger as JSON Lines for `audit`")
    export.add_argument("--data", type=Path, default=Path("data"), help="ledger folder")
    export.add_argument("--out", type=Path, required=True, help="the export file to write")
    export.add_argument(
        "--keys",
        type=Path,
        default=Path("keys"),
        help="key folder: signs a final checkpoint if the latest stored one is older",
    )
    audit = commands.add_parser(
        "audit",
        help="replay a ledger export: roots, signatures, lease invariants (DESIGN §6)",
        epilog="Exit codes: 0 every entry proven by a checkpoint signed by a --trust key and no"
        " violation; 1 violations found (an entry no trusted checkpoint covers, or no --trust"
        " given, is one); 2 bad usage or unreadable input.",
    )
    audit.add_argument("file", type=Path, help="a `tenure export` file")
    audit.add_argument(
        "--trust",
        action="append",
        metavar="DID",
        help="the log's did:key (GET /api/v1/keys); without one the audit cannot pass",
    )
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    add_lease_parser(commands)
    add_mcp_parser(commands)
    monitor.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args, argv[1:])
    if args.command == "apikey":
        return _apikey(args)
    if args.command == "keys":
        return _keys(args)
    if args.command == "export":
        return _export(args)
    if args.command == "audit":
        return _audit(args)
    if args.command == "lease":
        return lease_main(args, command)
    if args.command == "mcp":
        return mcp_main(args)
    if args.command == "monitor":
        return monitor.run(args)
    return 2


def _serve(args: argparse.Namespace, argv: list[str]) -> int:
    from api import workers

    if not 1 <= args.ttl_max <= 86400:
        print("tenure: --ttl-max must be 1..86400", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("tenure: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.fd is not None:  # a worker of `--workers N`: the parent set everything up
        workers.die_with_parent(args.parent)
        return _serve_one(args, socket.socket(fileno=args.fd))
    problem = _storage_problem(args.data, args.keys)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    if args.workers == 1:
        return _serve_one(args, None)
    sock = workers.listen(args.host, args.port)
    return workers.Workers(_without_workers(argv), sock, args.workers).run()


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
    from api.settings import Settings

    settings = Settings(
        data_dir=args.data,
        keys_dir=args.keys,
        require_api_key=args.require_api_key,
        allow_anonymous=not args.no_anonymous,
        rate_limit=args.rate_limit,
        ttl_max_seconds=args.ttl_max,
        lifecycle_seconds=args.lifecycle,
        origin=args.origin,
        checkpoint_interval=args.checkpoint_interval,
    )
    config = uvicorn.Config(
        create_app(settings),
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level=args.log_level,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    server.run(sockets=None if sock is None else [sock])
    return 0


def _storage_problem(data: Path, keys: Path) -> str | None:
    """Why the ledger or the keys cannot be written, said before the server starts (a read-only
    folder is an operator's mistake, not a traceback)."""
    from ledger.calls import now_ms
    from ledger.keyring import load_or_create_secret, signing_keys
    from ledger.storage import StorageError, open_storage

    try:
        storage = open_storage(data)
        try:
            storage.check_writable()
        finally:
            storage.close()
    except (OSError, StorageError) as error:
        return f"cannot write the ledger in {data}: {error} (it needs a writable folder)"
    try:
        load_or_create_secret(keys)
        signing_keys(keys, now_ms())  # generated once here, before any worker starts
    except OSError as error:
        return f"cannot use the key folder {keys}: {error}"
    return None


def _apikey(args: argparse.Namespace) -> int:
    from api.tenancy import create_api_key
    from ledger.storage import open_storage

    name = args.name
    if not (1 <= len(name) <= 128 and name.isprintable() and "/" not in name):
        print("tenure: NAME must be 1..128 printable characters without '/'", file=sys.stderr)
        return 2
    storage = open_storage(args.data)
    try:
        key = create_api_key(storage, name)
    finally:
        storage.close()
    print(key)
    print(f"API key for tenant {name!r}; shown once, stored only as its hash.", file=sys.stderr)
    return 0


def _keys(args: argparse.Namespace) -> int:
    import time

    from ledger.keyring import create_signing_key, signing_keys

    now = time.time_ns() // 1_000_000
    keys = signing_keys(args.keys, now)
    if args.action == "rotate":
        keys.append(create_signing_key(args.keys, max(now, keys[-1].created_at + 1)))
        message = "rotated: `tenure serve` signs with the new key from its next start, and"
        print(f"{message} records the old key's validity end then", file=sys.stderr)
    active = keys[-1]
    print(f"did: {active.did}")
    print(f"publicKeyMultibase: {active.multikey}")
    print(f"file: {active.path}")
    print(f"keys in folder: {len(keys)}")
    return 0


def _export(args: argparse.Namespace) -> int:
    import time

    from ledger.export import export_ledger
    from ledger.storage import open_storage, storage_exists

    if not storage_exists(args.data):
        print(f"tenure: no ledger in {args.data}", file=sys.stderr)
        return 2
    storage = open_storage(args.data)
    try:
        key = _log_key(storage, args.keys)
        if key is None:
            print(
                f"tenure: warning: no signing key in {args.keys} (--keys): entries after the"
                " latest stored checkpoint stay unproven, and `tenure audit` fails on them",
                file=sys.stderr,
            )
        signer = None if key is None else (key, time.time_ns() // 1_000_000)
        with args.out.open("w", encoding="utf-8") as out:
            count = export_ledger(
                storage, out, lambda n: print(f"exported {n}", file=sys.stderr), signer=signer
            )
    finally:
        storage.close()
    print(f"exported {count} entries to {args.out}", file=sys.stderr)
    return 0


def _log_key(storage: Any, keys_dir: Path) -> Any:
    """The folder's key the log signs with now (its recorded key with no validUntil), or None.
    The export signs its final checkpoint with it."""
    from ledger.keyring import load_signing_keys

    keys = load_signing_keys(keys_dir) if keys_dir.is_dir() else []
    active = {key.did for key in storage.signing_keys() if key.valid_until is None}
    return next((key for key in reversed(keys) if key.did in active), None)


def _audit(args: argparse.Namespace) -> int:
    """Only the base install on this path: no FastAPI, no SQLite."""
    import json

    from verify.audit import audit, parse_lines
    from verify.errors import MalformedInput

    try:
        with args.file.open("rb") as lines:
            report = audit(
                parse_lines(lines),
                args.trust,
                lambda n: print(f"audited {n} entries", file=sys.stderr),
            )
    except (OSError, MalformedInput) as e:
        print(f"tenure: {args.file}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_data(), indent=2))
    else:
        for line in [*report.violations, *(f"warning: {w}" for w in report.warnings)]:
            print(line)
        verdict = "OK" if report.ok else f"{len(report.violations)} violations"
        print(
            f"{report.entries} entries, {report.checkpoints_verified}/{report.checkpoints}"
            f" checkpoints verified, {report.keys} keys: {verdict}"
        )
        if not report.trusted:
            print(
                "tenure: no trusted key: pass --trust did:key:… (from GET /api/v1/keys);"
                " the export's own keys prove consistency, not origin",
                file=sys.stderr,
            )
    return 0 if report.ok else 1
