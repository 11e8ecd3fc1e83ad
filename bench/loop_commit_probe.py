"""What would the event loop running its own batches buy? A probe, not a design (issue 10).

Not a test, and nothing of it is in the server: prints figures. docs/performance.md (twelfth
round) found a group's lock time a quarter spent waiting for a core and much of the rest in the
writer thread sharing the interpreter with its own event loop. This probe measures the other
shape beside the default ``tenure serve``, alternated, with ``bench/vs_etcd.py``'s load: the
batch of lease calls is decided, written and committed **on the event loop's own thread**, and a
helper thread only waits for the ledger's lock.

The probe is an unchanged ``tenure serve`` whose processes load
``bench/probe_site/sitecustomize.py``, which patches, in each worker:

- ``GroupCommitter.submit_early`` (the lease route's units) to collect the loop's units and ask
  a helper thread for the ledger's write lock (the thread lock, then the ``flock``) — the
  helper blocks in ``flock`` while the loop goes on reading requests into the batch;
- once the helper holds it, the loop runs the whole batch — ``_commit`` as the writer thread
  would, in a transaction that does not take the lock again — lets go of the lock itself and
  resolves the futures; the helper's wake-up is a ``call_soon_threadsafe``, and the loop also
  looks for a held lock before each chunk of request bytes it parses and before each answer
  it writes, so the held lock does not wait out a queue of callbacks.

Every other unit (the sweeper's, waits) still goes through the writer thread, serialized with
the loop's by the same thread lock. Nothing is changed about durability: the same transaction,
``synchronous=FULL``, the answers still sent only once their commit is durable.

    .venv/bin/python bench/loop_commit_probe.py [--duration 10] [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

MODE_ENV = "TENURE_PROBE_LOOP_COMMIT"
"""Set in the probe server's environment."""

_READY: list[Any] = [None]
"""The committer whose helper holds the lock for its loop, until the loop runs the batch."""


def hook_workers() -> None:
    """In a probe server's process (``bench/probe_site/sitecustomize.py``): patch the group
    committer, the SQLite transaction and the two places the loop looks for a held lock."""
    from api import http_guard, responses
    from ledger import committer, metrics
    from ledger.sqlite import backend

    original_transaction = backend.SQLiteStorage.transaction
    loop_holds = threading.local()

    @contextlib.contextmanager
    def transaction(self: Any) -> Iterator[Any]:
        if not getattr(loop_holds, "held", False):
            with original_transaction(self) as tx:
                yield tx
            return
        conn = self._writer
        if self._checkpointer is None:
            self._start_checkpointer()
        conn.execute("BEGIN IMMEDIATE")
        try:
            tx = backend.SQLiteTransaction(conn, self._names)
            yield tx
            tx.flush()
            started = time.perf_counter()
            conn.execute("COMMIT")
            metrics.sqlite_committed(time.perf_counter() - started)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def start(self: Any) -> None:
        self._loop_units, self._asked, self._ready, self._taken = [], False, False, 0.0
        self._want = queue.SimpleQueue()
        helper = threading.Thread(target=_wait_lock, args=(self,), daemon=True)
        helper.start()

    def _wait_lock(self: Any) -> None:
        lock = self._storage._lock
        while self._want.get():
            lock._thread_lock.acquire()
            fcntl.flock(lock._fd, fcntl.LOCK_EX)
            self._taken = time.perf_counter()
            self._ready = True
            _READY[0] = self
            self._loop.call_soon_threadsafe(run_batch, self)

    def run_batch(self: Any) -> None:
        if not self._ready:
            return
        self._ready, _READY[0] = False, None
        batch, self._loop_units = self._loop_units, []
        lock = self._storage._lock
        loop_holds.held = True
        try:
            committer._prepare(batch)
            results, error = self._commit(batch)
        finally:
            loop_holds.held = False
            fcntl.flock(lock._fd, fcntl.LOCK_UN)
            lock._thread_lock.release()
            metrics.sqlite_lock_held(time.perf_counter() - self._taken)
        self._asked = bool(self._loop_units)
        if self._asked:
            self._want.put(True)
        committer._resolve(batch, results, error)

    def submit_early(self: Any, work: Any, prepare: Any = None) -> Any:
        if not hasattr(self, "_want"):
            start(self)
        early, future = self._loop.create_future(), self._loop.create_future()
        self._loop_units.append((work, future, prepare, early))
        self._last = future
        if not self._asked:
            self._asked = True
            self._want.put(True)
        return early, future

    real_join_late = committer.GroupCommitter._join_late

    def join_late(self: Any, batch: Any) -> None:
        if threading.current_thread() is self._thread:  # the loop's batch takes none of them
            real_join_late(self, batch)

    def poll() -> None:
        ready = _READY[0]
        if ready is not None:
            run_batch(ready)

    real_data_received = http_guard.GuardedHttpToolsProtocol.data_received

    def data_received(self: Any, data: bytes) -> None:
        poll()
        real_data_received(self, data)

    real_respond = responses.respond

    def respond(*args: Any, **kwargs: Any) -> Any:
        poll()
        return real_respond(*args, **kwargs)

    setattr(backend.SQLiteStorage, "transaction", transaction)  # noqa: B010
    setattr(committer.GroupCommitter, "submit_early", submit_early)  # noqa: B010
    setattr(committer.GroupCommitter, "_join_late", join_late)  # noqa: B010
    setattr(http_guard.GuardedHttpToolsProtocol, "data_received", data_received)  # noqa: B010
    setattr(responses, "respond", respond)  # noqa: B010 (the routes import it afterwards)


def main() -> int:
    from vs_etcd import _LUA_TENURE, show, tenure, wrk

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    args.threads = 2  # vs_etcd.wrk's
    probe = {
        MODE_ENV: "1",
        "PYTHONPATH": f"{ROOT / 'bench' / 'probe_site'}{os.pathsep}{ROOT / 'bench'}",
    }
    for _ in range(args.rounds):
        for name, env in (("tenure", {}), ("probe", probe)):
            os.environ.update(env)
            try:
                with tempfile.TemporaryDirectory() as tmp, tenure(Path(tmp), []) as served:
                    url, key, pid = served
                    show(wrk(name, url, _LUA_TENURE, args, {"KEY": key}, pid, lock=True))
            finally:
                for variable in env:
                    os.environ.pop(variable, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
