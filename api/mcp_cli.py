"""``tenure mcp``: the MCP server over stdio (needs ``pip install 'tenure[mcp]'``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from api.server_options import add_server_options


def add_mcp_parser(commands: Any) -> None:
    """Register ``tenure mcp`` on the ``tenure`` subcommands."""
    mcp = commands.add_parser(
        "mcp",
        help="serve tenure's tools to an agent host over MCP (stdio)",
        epilog="Exit codes: 0 the host closed stdin, 2 bad usage or the mcp extra is missing.",
    )
    add_server_options(mcp)
    mcp.add_argument(
        "--trust",
        action="append",
        metavar="DID",
        help="verify every answer against this did:key (default: the keys the server serves)",
    )


def mcp_main(args: argparse.Namespace) -> int:
    """Serve MCP over stdin/stdout until the host closes it."""
    try:
        from api.mcp_server import serve_stdio
    except ImportError as error:
        print(f"tenure mcp: {error}; install with: pip install 'tenure[mcp]'", file=sys.stderr)
        return 2
    serve_stdio(args.url, args.api_key, args.namespace, args.trust)
    return 0
