"""A throw-away PostgreSQL server for the tests: a real server, started here, removed after.

Debian's ``postgresql`` package provides the binaries (``scripts/test.sh`` installs it when
missing). The server refuses to run as root, so as root it runs as the ``postgres`` user. It
listens only on a unix socket in its own temporary folder (no TCP port, nothing to collide with),
keeps ``fsync`` on as a real deployment would, and is stopped with its folder removed when the
test session ends. If it cannot start, :meth:`start` raises with the reason and its log: the
PostgreSQL tests fail loudly, they are never skipped.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "tenure"


def binaries() -> Path:
    """The newest installed PostgreSQL's bin folder."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed: `apt-get install postgresql` (scripts/test.sh does it)"
        )
    return Path(found[-1]).parent


def _version(path: str) -> int:
    return int(Path(path).parent.parent.name)


class PostgresServer:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tenure-pg-"))
        self.bin = binaries()
        self._as_root = os.geteuid() == 0

    @property
    def socket_dir(self) -> Path:
        return self.root

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@/{database}?host={self.root}"

    def start(self) -> PostgresServer:
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.root / "data"), "-A", "trust", "-U", USER, "-E", "UTF8")
        self.resume()
        return self

    def pause(self) -> None:
        """Stop the server, keeping its data: clients see the database lost."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the server on its data (after :meth:`pause`, the same databases)."""
        options = f"-k {self.root} -c listen_addresses= -c max_connections=200"
        self._run(
            "pg_ctl", "-D", str(self.root / "data"), "-o", options, "-l", str(self.log), "-w",
            "start",
        )  # fmt: skip

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def create_database(self, name: str) -> str:
        """A fresh, empty database on this server; its URL."""
        self._run("createdb", "-h", str(self.root), "-U", USER, name)
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(
                f"PostgreSQL: {' '.join(cmd)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}{log[-2000:]}"
            )
