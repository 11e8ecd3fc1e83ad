"""The `tenure` command: serve, apikey, and the operator's tools.

Exit codes: 0 success, 1 the operation failed, 2 bad usage (or the extra a command needs is
not installed).
"""

from __future__ import annotations

import argparse
import sys

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


def _run(args: argparse.Namespace, argv: list[str], command: list[str]) -> int:
    """The subcommand's own main."""
    if args.command == "serve":
        return serve_cli.serve_main(args, argv[1:])
    if args.command == "apikey":
        return admin_cli.apikey_main(args)
    if args.command == "keys":
        return admin_cli.keys_main(args)
    if args.command == "export":
        return admin_cli.export_main(args)
    if args.command == "audit":
        return admin_cli.audit_main(args)
    if args.command == "backup":
        return backup_cli.backup_main(args)
    if args.command == "restore":
        return backup_cli.restore_main(args)
    if args.command == "fence-floor":
        return backup_cli.fence_floor_main(args)
    if args.command == "lease":
        return lease_main(args, command)
    if args.command == "mcp":
        return mcp_main(args)
    if args.command == "monitor":
        return monitor.run(args)
    return 2
