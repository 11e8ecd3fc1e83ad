"""The runtime (ledger/runtime.py): any front starts the whole service in a few lines, and its
background tasks are supervised — a failure is reported and retried, never the end of the task."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ledger.backends import open_backend
from ledger.keys.keyring import keys_fingerprint, load_or_create_secret
from ledger.lease.calls import LeaseCall, StorageUnavailable
from ledger.runtime import Runtime, RuntimeConfig
from ledger.storage import Storage, Transaction
from tests.conftest import ROOT
from tests.names_key import NAMES

FRONT = """
import asyncio, json, sys
from pathlib import Path
from ledger.lease.calls import LeaseCall
from ledger.runtime import Runtime, RuntimeConfig

async def front(root: Path) -> dict:
    runtime = Runtime.open(RuntimeConfig(root / "data", root / "keys"))
    await runtime.start()
    answer = await runtime.service.lease(LeaseCall("acquire", "t", "r", holder="w"))
    await runtime.stop()
    return {"data": answer.data, "ownerToken": answer.owner_token}

found = asyncio.run(front(Path(sys.argv[1])))
print(json.dumps({**found, "fastapi": "fastapi" in sys.modules}))
"""


def test_a_front_without_fastapi_starts_the_whole_service(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FRONT, str(tmp_path)], cwd=ROOT, capture_output=True, check=True
    )
    found = json.loads(done.stdout)
    assert found["fastapi"] is False
    assert found["data"]["outcome"] == "GRANTED" and found["data"]["fencingToken"] == 1
    assert found["ownerToken"].startswith("own_") and "ownerToken" not in found["data"]


class Flaky:
    """The real backend, whose next ``failures`` write transactions fail (a full disk)."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.failures = 0

    def transaction(self) -> AbstractContextManager[Transaction]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        with self.inner.transaction() as tx:
            if self.failures:
                self.failures -= 1
                raise OSError("disk full")
            yield tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def start_runtime(tmp_path: Path, clock: Callable[[], int]) -> tuple[Runtime, Flaky]:
    config = RuntimeConfig(tmp_path / "data", tmp_path / "keys", sweep_interval=0.005, clock=clock)
    keys = keys_fingerprint(load_or_create_secret(config.keys_dir))
    backend = open_backend(config.data_dir, names=NAMES, keys=keys)
    flaky = Flaky(backend.storage)
    return Runtime(config, replace(backend, storage=flaky)), flaky  # type: ignore[arg-type]


async def until(condition: Callable[[], bool]) -> None:
    """Let the background tasks run (real scheduling, not lease time) until ``condition``."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never held")


def kinds(runtime: Runtime) -> list[str]:
    return [json.loads(leaf)["kind"] for _, leaf in runtime.storage.entries(0, 100)]


def test_a_sweep_that_raises_is_retried_and_expiries_are_still_recorded(tmp_path: Path) -> None:
    now = [1_800_000_000_000]

    async def scenario() -> None:
        runtime, _ = start_runtime(tmp_path, lambda: now[0])
        await runtime.start()
        await runtime.service.lease(LeaseCall("acquire", "t", "r", holder="w", ttl_seconds=1))
        real_sweep, raised = runtime.service.sweep, []

        def sweep_once_failing(at: int) -> asyncio.Future[int]:
            if not raised:  # as when the writer fails between the health check and the sweep
                raised.append(at)
                raise StorageUnavailable("disk full")
            return real_sweep(at)

        runtime.service.sweep = sweep_once_failing  # type: ignore[method-assign]
        await until(lambda: bool(raised))
        assert runtime.health()["tasks"]["sweeper"]["state"] == "failing"
        assert runtime.health()["status"] == "unknown" and not runtime.healthy
        now[0] += 2_000  # the lease expires on the fixed clock
        await until(lambda: kinds(runtime) == ["acquire", "expire"])
        await until(lambda: runtime.healthy)
        assert runtime.health()["tasks"]["sweeper"]["state"] == "running"
        await runtime.stop()

    asyncio.run(scenario())


def test_after_a_failed_sweep_commit_the_sweeper_resumes_with_the_writer(tmp_path: Path) -> None:
    now = [1_800_000_000_000]

    async def scenario() -> None:
        runtime, flaky = start_runtime(tmp_path, lambda: now[0])
        await runtime.start()
        await runtime.service.lease(LeaseCall("acquire", "t", "r", holder="w", ttl_seconds=1))
        flaky.failures = 1  # the sweep's commit of the expiry fails
        now[0] += 2_000
        await until(lambda: flaky.failures == 0)  # the expiry's commit failed: recovery reloads
        await until(lambda: kinds(runtime) == ["acquire", "expire"])
        await until(lambda: runtime.healthy)
        await runtime.stop()

    asyncio.run(scenario())


def test_a_dead_task_fails_health(tmp_path: Path) -> None:
    async def scenario() -> None:
        runtime, _ = start_runtime(tmp_path, lambda: 1_800_000_000_000)
        await runtime.start()
        assert runtime.healthy
        await runtime.tasks.tasks["sealer"].stop()
        assert runtime.health()["tasks"]["sealer"]["state"] == "dead"
        assert not runtime.healthy
        await runtime.stop()

    asyncio.run(scenario())
