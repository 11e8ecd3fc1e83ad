"""Would one sequencer process per host beat the shared write lock? A probe, not a design.

Not a test, and nothing of it is in the server: prints figures. It measures the option
docs/decisions/0012 named for going further: a process running the whole lease service behind a
Unix socket (pickled ``LeaseCall`` in, ``Answer`` out; ``--inline`` commits on its loop), fed by
an unchanged ``tenure serve`` whose workers load ``bench/probe_site/sitecustomize.py`` to forward
lease calls. Alternated with the default server under ``bench/vs_etcd.py``'s load, printed by its
``show`` (the sequencer's CPU included; its lock is outside the workers' ``/metrics``). What it
found: docs/performance.md, eighth round.

    .venv/bin/python bench/sequencer_probe.py [--duration 10] [--rounds 2] [--inline]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pickle
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SOCKET_ENV = "TENURE_PROBE_SOCKET"
_HEAD = struct.Struct("<IQ")  # payload length, request id


class _Frames(asyncio.Protocol):
    """Length-prefixed frames in both directions; what is sent in one loop turn is one write."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._out: list[bytes] = []
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= _HEAD.size:
            size, ident = _HEAD.unpack_from(self._buffer)
            if len(self._buffer) < _HEAD.size + size:
                return
            payload = bytes(self._buffer[_HEAD.size : _HEAD.size + size])
            del self._buffer[: _HEAD.size + size]
            self.frame(ident, pickle.loads(payload))

    def frame(self, ident: int, value: Any) -> None:
        raise NotImplementedError

    def send(self, ident: int, value: Any) -> None:
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        payload = pickle.dumps(value, protocol=5)
        self._out += (_HEAD.pack(len(payload), ident), payload)

    def _flush(self) -> None:
        out, self._out = self._out, []
        self.transport.write(b"".join(out))


class _Serving(_Frames):
    def __init__(self, service: Any) -> None:
        super().__init__()
        self._service = service
        self._tasks: set[asyncio.Task[None]] = set()

    def frame(self, ident: int, value: Any) -> None:
        task = asyncio.ensure_future(self._answer(ident, value))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, ident: int, call: Any) -> None:
        try:
            self.send(ident, (True, await self._service.lease(call)))
        except Exception as error:  # the worker raises it as the service would have
            self.send(ident, (False, error))


class _Forwarding(_Frames):
    def __init__(self) -> None:
        super().__init__()
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._next = 0

    def frame(self, ident: int, value: Any) -> None:
        ok, answer = value
        future = self._waiting.pop(ident)
        future.set_result(answer) if ok else future.set_exception(answer)

    async def lease(self, call: Any) -> Any:
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        self.send(self._next, call)
        return await future


def hook_workers() -> None:
    """In a ``tenure serve`` process (``bench/probe_site``): lease calls go to the sequencer."""
    from ledger.runtime import Runtime

    start = Runtime.start

    async def forwarding_start(self: Runtime) -> None:
        await start(self)
        loop = asyncio.get_running_loop()
        _, client = await loop.create_unix_connection(_Forwarding, os.environ[SOCKET_ENV])
        self.service.lease = client.lease  # type: ignore[method-assign]

        async def early(call: Any) -> Any:
            return await client.lease(call), None

        self.service.lease_early = early  # type: ignore[method-assign]

    Runtime.start = forwarding_start  # type: ignore[method-assign]


def _inline_commits() -> None:
    """Batches commit on the sequencer's loop: no writer thread shares its interpreter lock."""
    from ledger.writer import committer, service

    class Inline(committer.GroupCommitter):
        def __init__(self, storage: Any, loop: Any, hooks: Any = None) -> None:
            self._storage, self._loop, self._hooks = storage, loop, hooks
            self._items: list[Any] = []
            self._last, self.failure, self.commits, self._stopping = None, None, 0, False

        def submit(self, work: Any, prepare: Any = None) -> Any:
            future = self._loop.create_future()
            if not self._items:
                self._loop.call_soon(self._flush)
            self._items.append((work, future, prepare, None))
            self._last = future
            return future

        def _flush(self) -> None:
            batch, self._items = self._items, []
            committer._prepare(batch)  # type: ignore[attr-defined]  # as of loop_commit_probe.PINNED
            results, error = self._commit(batch)
            committer._resolve(batch, results, error)  # type: ignore[attr-defined]

        def _join_late(self, batch: Any) -> None:
            return

        def close(self) -> None:
            if self._items:
                self._flush()

    service.GroupCommitter = Inline  # type: ignore[attr-defined, assignment]


async def _sequence(data: Path, keys: Path, path: str) -> None:
    from ledger.runtime import Runtime, RuntimeConfig

    core = Runtime.open(RuntimeConfig(data, keys))
    await core.start()
    await asyncio.get_running_loop().create_unix_server(lambda: _Serving(core.service), path)
    print("ready", flush=True)
    await asyncio.Event().wait()


@contextlib.contextmanager
def _probe(scratch: Path, inline: bool) -> Iterator[tuple[str, str, list[int]]]:
    from vs_etcd import _api_key, _running, free_port, wait_http

    data, keys, path = scratch / "data", scratch / "keys", str(scratch / "sequencer.sock")
    cmd = [sys.executable, __file__, "--sequencer", str(data), str(keys), path]
    log = scratch / "sequencer.log"
    with _running([*cmd, *(["--inline"] if inline else [])], log) as sequencer:
        while "ready" not in (log.read_text() if log.exists() else ""):
            if sequencer.poll() is not None:
                raise SystemExit(f"the sequencer exited: {log.read_text()}")
            time.sleep(0.1)
        port = free_port()
        serve = [sys.executable, "-m", "api", "serve", "--port", str(port), "--data", str(data)]
        site = f"{ROOT / 'bench' / 'probe_site'}{os.pathsep}{ROOT / 'bench'}"
        os.environ |= {SOCKET_ENV: path, "PYTHONPATH": site}
        try:
            with _running([*serve, "--keys", str(keys)], scratch / "tenure.log") as server:
                url = f"http://127.0.0.1:{port}"
                wait_http(url + "/healthz", server)
                yield url, _api_key(data), [server.pid, sequencer.pid]
        finally:
            for name in (SOCKET_ENV, "PYTHONPATH"):
                os.environ.pop(name, None)


@contextlib.contextmanager
def _default(scratch: Path) -> Iterator[tuple[str, str, list[int]]]:
    from vs_etcd import tenure

    with tenure(scratch, []) as (url, key, pid):
        yield url, key, [pid]


def _drive(name: str, url: str, key: str, pids: list[int], args: argparse.Namespace) -> None:
    from vs_etcd import show, wrk
    from wrk_lua import LUA_TENURE

    args.threads = 2
    show(wrk(name, url, LUA_TENURE, args, {"KEY": key}, *pids))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--inline", action="store_true", help="no writer thread in the sequencer")
    parser.add_argument("--sequencer", nargs=3, help=argparse.SUPPRESS)  # data, keys, socket
    args = parser.parse_args()
    from loop_commit_probe import refuse_if_moved

    refuse_if_moved()
    if args.sequencer:
        if args.inline:
            _inline_commits()
        data, keys, path = args.sequencer
        asyncio.run(_sequence(Path(data), Path(keys), path))
        return 0
    for _ in range(args.rounds):
        for name in ("tenure", "sequencer"):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                starting = _default(folder) if name == "tenure" else _probe(folder, args.inline)
                with starting as (url, key, pids):
                    _drive(name, url, key, pids, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
