"""The `tenure` command: serve, apikey, and the operator's tools.

Exit codes: 0 success, 1 the operation failed, 2 bad usage (or the extra a command needs is
not installed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from api import admin_cli, backup_cli, extras, monitor, serve_cli
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
    serve_cli.add_parser(commands)
    admin_cli.add_parsers(commands)
    backup_cli.add_parsers(commands)
    add_lease_parser(commands)
    add_mcp_parser(commands)
    monitor.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    name = " ".join([args.command, *([args.action] if args.command == "lease" else [])])
    problem = extras.problem(name, getattr(args, "database", None) is not None)
    if problem is not None:
        print(f"tenure: {problem}", file=sys.stderr)
        return 2
    try:
        return _run(args, argv, command)
    except ModuleNotFoundError as error:
        if not extras.third_party(error):
            raise
        print(f"tenure: {extras.install_hint(name, [str(error.name)])}", file=sys.stderr)
        return 2


_MAINS: dict[str, Callable[[argparse.Namespace], int]] = {
    "apikey": admin_cli.apikey_main,
    "keys": admin_cli.keys_main,
    "export": admin_cli.export_main,
    "audit": admin_cli.audit_main,
    "backup": backup_cli.backup_main,
    "restore": backup_cli.restore_main,
    "fence-floor": backup_cli.fence_floor_main,
    "mcp": mcp_main,
    "monitor": monitor.run,
}
"""The subcommands whose main takes only the parsed arguments."""


def _run(args: argparse.Namespace, argv: list[str], command: list[str]) -> int:
    """The subcommand's own main."""
    if args.command == "serve":
        return serve_cli.serve_main(args, argv[1:])
    if args.command == "lease":
        return lease_main(args, command)
    main = _MAINS.get(args.command)
    return 2 if main is None else main(args)
