"""A throw-away PostgreSQL for the benches (``--database auto``), and the CPU it used.

The server is the tests' one (``tests/postgres.py``: a unix socket in a temporary folder,
``fsync`` and ``synchronous_commit`` on, removed after). The database's CPU is the second half of
what a lease event costs on PostgreSQL, so the benches print it beside tenure's: the postmaster's
and its live children's user+system time, from /proc (a backend's time is lost once it exits,
so read it while the servers are still connected).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.postgres import PostgresServer  # noqa: E402


def start() -> tuple[PostgresServer, str]:
    """A started server and the URL of a fresh database on it."""
    server = PostgresServer().start()
    return server, server.create_database("bench")


def cpu_seconds(server: PostgresServer) -> float | None:
    """User+system CPU seconds of the server's processes now; None where /proc cannot say."""
    try:
        postmaster = int((server.root / "data" / "postmaster.pid").read_text().split()[0])
        kids = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
        total = 0
        for pid in [postmaster, *map(int, kids)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            total += int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None
    return total / os.sysconf("SC_CLK_TCK")
