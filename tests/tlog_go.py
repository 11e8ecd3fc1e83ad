"""Build and run tests/interop/tlog/main.go: Go's golang.org/x/mod/sumdb/tlog reading a log's
C2SP tiles, from Debian's golang-go and golang-golang-x-mod-dev, offline (GOPATH mode,
GOPROXY=off: nothing is downloaded)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent / "interop" / "tlog" / "main.go"
GOPATH = Path("/usr/share/gocode")
TLOG = GOPATH / "src" / "golang.org" / "x" / "mod" / "sumdb" / "tlog"
SKIP_REASON = (
    "Go's tlog reader is not installed: needs `go` on PATH and Debian's golang-golang-x-mod-dev"
    " (scripts/test.sh installs both as root: apt-get install golang-go golang-golang-x-mod-dev)"
)


def require_go() -> None:
    """Skip when Go or x/mod is missing, but never in CI, where their absence is a failure."""
    if shutil.which("go") is not None and TLOG.is_dir():
        return
    if os.environ.get("CI"):
        pytest.fail(f"in CI: {SKIP_REASON}")
    pytest.skip(SKIP_REASON)


def build(folder: Path) -> Path:
    """Compile the checker into ``folder``; its path."""
    binary = folder / "tlogcheck"
    env = _go_env()
    command = ["go", "build", "-o", str(binary), str(SOURCE)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return binary


def check(
    binary: Path, base: str, vkey: str | None = None, old: tuple[int, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the checker on a URL or folder; ``old`` is (size, base64 root) to prove consistent."""
    command = [str(binary)]
    if vkey is not None:
        command += ["-vkey", vkey]
    if old is not None:
        command += ["-old", f"{old[0]}:{old[1]}"]
    return subprocess.run([*command, base], capture_output=True, text=True, timeout=120)


def check_proof(binary: Path, proof: Path, vkey: str) -> subprocess.CompletedProcess[str]:
    """Run the checker on a c2sp.org/tlog-proof file."""
    command = [str(binary), "-vkey", vkey, "-proof", str(proof)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _go_env() -> dict[str, str]:
    return os.environ | {
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOPROXY": "off",
        "GOFLAGS": "",
        "CGO_ENABLED": "0",
    }
