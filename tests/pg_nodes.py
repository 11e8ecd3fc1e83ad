"""Two `tenure serve --database` nodes on one real PostgreSQL database, as a load balancer
would see them: separate processes, ports and data folders, one keys folder's contents."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.conftest import Server, lease


@dataclass
class Nodes:
    """Node ``a`` started first, so it leads (sweeper, dead man, sealer) until it dies."""

    url: str
    keys: Path
    a: Server
    b: Server

    @property
    def both(self) -> list[Server]:
        return [self.a, self.b]

    def queued(self) -> int:
        """Rows in the one ``waiters`` table, whichever node queued them."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM waiters").fetchone()
            return int(row[0]) if row else 0


@contextmanager
def two_nodes(postgres: Any, root: Path, *extra: str) -> Iterator[Nodes]:
    """Start node a (it creates the keys), then node b on the same database and keys."""
    url = str(postgres.create_database("n_" + secrets.token_hex(6)))
    keys = root / "keys"
    args = ["--database", url, "--keys", str(keys), *extra]  # the last --keys wins
    (root / "a").mkdir()
    (root / "b").mkdir()
    a = Server(root / "a", list(args)).start()
    b = Server(root / "b", list(args))
    try:
        b.start()
        yield Nodes(url, keys, a, b)
    finally:
        for node in (a, b):
            if node.process is not None and node.process.poll() is None:
                node.stop()


def burst(nodes: Nodes, count: int, **body: Any) -> list[dict[str, Any]]:
    """``count`` acquires at once, alternating between the nodes, each on its own connection."""
    urls = itertools.cycle([nodes.a.url, nodes.b.url])
    targets = [next(urls) for _ in range(count)]

    def one(n: int) -> dict[str, Any]:
        with httpx.Client(base_url=targets[n], timeout=60) as client:
            answer = lease(client, "acquire", holder=f"h{n}", **body)
            assert answer.status_code in (201, 409), answer.text
            data: dict[str, Any] = answer.json()["data"]
            return data

    with ThreadPoolExecutor(64) as pool:
        return list(pool.map(one, range(count)))
