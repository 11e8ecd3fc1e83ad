"""Shared fixtures: a real `tenure serve` over a real socket, with its own data and keys."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rid(prefix: str = "res") -> str:
    """A resource name the anonymous tenant accepts (high entropy) and no other test uses."""
    return f"{prefix}-{secrets.token_hex(16)}"


@dataclass
class Server:
    """One `tenure serve` process; `restart()` keeps its data and keys."""

    root: Path
    args: list[str] = field(default_factory=list)
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def start(self) -> Server:
        self.port = free_port()
        cmd = [sys.executable, "-m", "api", "serve", "--port", str(self.port)]
        cmd += ["--data", str(self.data), "--keys", str(self.root / "keys"), *self.args]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log)
        try:
            self._wait_ready()
        except RuntimeError:
            self._discard()  # a server that never answered is not left running for later tests
            raise
        return self

    def _discard(self) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError(f"server did not answer within 20 s: {self.log.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout=20)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> Server:
        if self.process is not None and self.process.poll() is None:
            self.stop()
        return self.start()

    def rotate_keys(self) -> None:
        """`tenure keys rotate` on this server's keys folder (a running server switches within
        a second, or at once on SIGHUP)."""
        cmd = [sys.executable, "-m", "api", "keys", "rotate", "--keys", str(self.root / "keys")]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("server")).start()
    yield srv
    if srv.process is not None and srv.process.poll() is None:
        srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    """A server of the test's own, not yet started: set `args`, then `start()`."""
    srv = Server(tmp_path)
    yield srv
    if srv.process is not None and srv.process.poll() is None:
        srv.stop()


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def lease(client: httpx.Client, op: str, **body: Any) -> httpx.Response:
    return client.post(f"/api/v1/lease/{op}", json=body)


def ledger_size(client: httpx.Client) -> int:
    return int(client.get("/healthz").json()["data"]["ledger"]["treeSize"])


os.environ.setdefault("PYTHONUNBUFFERED", "1")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """One real PostgreSQL server for the whole session (tests/postgres.py); fails, never skips,
    when it cannot start."""
    from tests.postgres import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres: Any) -> str:
    """A fresh, empty database of the session's PostgreSQL server, for one test."""
    return str(postgres.create_database("t_" + secrets.token_hex(6)))
