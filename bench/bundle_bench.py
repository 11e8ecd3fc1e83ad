"""Cost of verifying one offline receipt bundle (DESIGN §6): the library call and the CLI process.

Run: ``.venv/bin/python bench/bundle_bench.py [runs]``. Starts its own ``tenure serve`` on a free
port with throw-away data and keys, appends a few hundred entries (so the audit path is ~9 hashes
long), fetches one bundle with an eddsa-jcs-2022 receipt and one with eddsa-rdfc-2022, then
prints the median (10th/90th percentiles) of ``verify_bundle`` over many runs, and of the whole
``verify-provenance FILE`` process over ~10 runs. Not a test: the goal is < 5 ms per bundle in
the library.
"""

from __future__ import annotations

import functools
import json
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verify.bundle import verify_bundle  # noqa: E402

ENTRIES = 300
CLI_RUNS = 10


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _call(url: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data, {"content-type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@contextmanager
def _server(folder: Path) -> Iterator[str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "api", "serve", "--port", str(port)]
    cmd += ["--data", str(folder / "data"), "--keys", str(folder / "keys")]
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def _wait(url: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            _call(url + "/healthz")
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def _trusted(url: str) -> list[str]:
    """The server's did:keys (``GET /api/v1/keys``): what an auditor passes as ``--trust``."""
    return [str(key["did"]) for key in _call(url + "/api/v1/keys")["keys"]]


def _bundles(url: str) -> dict[str, Any]:
    for _ in range(ENTRIES):
        body = {"resource": f"bench-{secrets.token_hex(16)}", "holder": "w"}
        _call(url + "/api/v1/lease/acquire", body)
    index = ENTRIES // 3
    rdfc = {"Accept-Provenance": "eddsa-rdfc-2022"}
    return {
        "eddsa-jcs-2022": _call(f"{url}/api/v1/log/bundle/{index}"),
        "eddsa-rdfc-2022": _call(f"{url}/api/v1/log/bundle/{index}", headers=rdfc),
    }


def _timed(action: Callable[[], object], runs: int) -> list[float]:
    action()  # warm up (pyld caches the bundled contexts)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def _line(label: str, samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=10)
    median = statistics.median(samples) * 1e3
    spread = f"p10 {cuts[0] * 1e3:.2f} / p90 {cuts[-1] * 1e3:.2f}"
    return f"{label:<48} median {median:8.2f} ms  ({spread} ms, {len(samples)} runs)"


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("verify-provenance")
    return [str(script)] if script.exists() else [sys.executable, "-m", "verify"]


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with _server(folder) as url:
            bundles, trusted = _bundles(url), _trusted(url)
        size = bundles["eddsa-jcs-2022"]["inclusion"]["treeSize"]
        print(
            f"bundle of entry {ENTRIES // 3} in a tree of {size}; Python {sys.version.split()[0]}"
        )
        for suite, bundle in bundles.items():
            assert verify_bundle(bundle, trusted).ok
            samples = _timed(functools.partial(verify_bundle, bundle, trusted), runs)
            print(_line(f"library verify_bundle ({suite})", samples))
        for suite, bundle in bundles.items():
            path = folder / f"{suite}.json"
            path.write_text(json.dumps(bundle))
            command = [*_cli(), "--trust", trusted[0], str(path)]
            run = lambda c=command: subprocess.run(c, check=True, capture_output=True)  # noqa: E731
            print(_line(f"process verify-provenance FILE ({suite})", _timed(run, CLI_RUNS)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
