"""The floor of a compiled front end for the hot acquire route: a probe, not a design.

Not a test: prints figures. Builds ``bench/frontend_floor/main.go`` (Go's standard library
only) and drives it with ``bench/vs_etcd.py``'s acquire load: it parses each acquire, answers
~2.5 KB from a stub decision (nothing stored) and signs the answer with Ed25519. Its server CPU
per request is what HTTP, the codec and the signature would cost tenure outside the interpreter;
decisions/0044 compares it with the ~290 µs budget. Needs ``go``, ``wrk``.

    .venv/bin/python bench/frontend_floor.py [--duration 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_etcd import _running, free_port, show, wait_http, wrk
from wrk_lua import LUA_TENURE

SOURCE = Path(__file__).resolve().parent / "frontend_floor"


def build(into: Path) -> Path:
    """The probe's binary, built from its source in ``into`` (Go's build cache there too)."""
    binary = into / "frontend_floor"
    env = os.environ | {"GOCACHE": str(into / "gocache"), "CGO_ENABLED": "0"}
    cmd = ["go", "build", "-o", str(binary), "main.go"]
    subprocess.run(cmd, cwd=SOURCE, env=env, check=True, capture_output=True)
    return binary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="measured seconds per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    args = parser.parse_args()
    missing = [tool for tool in ("go", "wrk") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        binary, port = build(Path(tmp)), free_port()
        with _running([str(binary), str(port)], Path(tmp) / "probe.log") as process:
            url = f"http://127.0.0.1:{port}"
            wait_http(url + "/healthz", process)
            env = {"KEY": "unused", "TTL": "5"}
            wrk("warm-up", url, LUA_TENURE, args, env, lock=False)
            for _ in range(args.rounds):
                show(wrk("front end", url, LUA_TENURE, args, env, process.pid, lock=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
