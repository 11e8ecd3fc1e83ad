"""The options every command that talks to a running server takes: where it is and who is calling.

``tenure lease run`` and ``tenure mcp`` share them, with the same environment defaults.
"""

from __future__ import annotations

import argparse
import os


def add_server_options(command: argparse.ArgumentParser) -> None:
    """Add ``--url``, ``--api-key`` and ``--namespace`` (``TENURE_URL``, ``TENURE_API_KEY``,
    ``TENURE_NAMESPACE``)."""
    env = os.environ.get
    command.add_argument(
        "--url",
        default=env("TENURE_URL", "http://127.0.0.1:8080"),
        help="server URL (TENURE_URL; default %(default)s)",
    )
    command.add_argument(
        "--api-key", default=env("TENURE_API_KEY"), help="API key (TENURE_API_KEY)"
    )
    command.add_argument(
        "--namespace", default=env("TENURE_NAMESPACE"), help="namespace (TENURE_NAMESPACE)"
    )
