"""The composition root outside any framework (STYLE 9b, docs/decisions/0005).

A :class:`Runtime` wires the storage, the signing keys and master secret
(``ledger/keys/keyring.py``), the lease service, the log reader, the issuer and the supervised
background tasks — the sweeper (rule 7, rule 13, rule 12's 24 h) and the checkpoint sealer.
Any front starts the whole service in a few lines::

    runtime = Runtime.open(RuntimeConfig(data_dir, keys_dir))
    await runtime.start()
    answer = await runtime.service.lease(LeaseCall("acquire", "t", "r", holder="w"))
    await runtime.stop()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import rotation
from ledger.backends import Backend, open_backend
from ledger.keys.keyring import (
    SigningKey,
    keys_fingerprint,
    load_or_create_names_key,
    load_or_create_secret,
    load_signing_keys,
    newest_key_file,
    record_keys,
    signing_keys,
)
from ledger.keys.names import NameCodec
from ledger.keys.signer import Signer
from ledger.lease.calls import Limits, now_ms
from ledger.lease.provenance import Issuer
from ledger.lease.sweeper import next_sweep_in
from ledger.location import default_origin
from ledger.log.view import LogReader, SignedCheckpoint
from ledger.membership import Membership
from ledger.storage import Storage, StorageError
from ledger.writer.sealturn import wait_before
from ledger.writer.service import LeaseService
from ledger.writer.supervisor import Supervisor

SEAL_SPACING = 1.0
"""Seconds between two checkpoints sealed because a reader asked (the sealer's own are apart
by ``checkpoint_interval``): readers cannot make the log sign and fsync faster than this."""

LEAD_INTERVAL = 1.0
"""Seconds between attempts to take the lead when another worker holds it."""


@dataclass(frozen=True)
class RuntimeConfig:
    """Where the ledger and keys live, the limits, the task intervals and the clock (ms).
    ``database``: a ``postgresql://`` URL; the ledger is there rather than in ``data_dir``.
    ``sleep``: how a reader waits out the sealing spacing (a test's fixed clock moves it)."""

    data_dir: Path
    keys_dir: Path
    database: str | None = None
    origin: str | None = None
    host_name: str | None = None
    limits: Limits = field(default_factory=Limits)
    sweep_interval: float = 0.1
    checkpoint_interval: float = 10.0
    key_watch_interval: float = 1.0
    clock: Callable[[], int] = now_ms
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class Runtime:
    """The running service, independent of how it is reached (HTTP, MCP, a CLI, a test)."""

    def __init__(self, config: RuntimeConfig, backend: Backend) -> None:
        self.config = config
        self.storage = storage = backend.storage
        self.gauges = backend.gauges
        self.clock = config.clock
        secret = load_or_create_secret(config.keys_dir)
        self.cluster: Membership = backend.membership
        self._backend = backend
        keys = signing_keys(config.keys_dir, self.clock())
        rotation.refuse_retired(storage, keys[-1], self.clock())
        record_keys(storage, keys[-1], self.clock())
        self.key_retired = False
        """Another node rotated to a key this node's folder lacks: not healthy until it has it."""
        origin = config.origin or _kept_origin(storage, config.host_name)
        self.log = LogReader(storage, origin, keys[-1])
        self.issuer = Issuer(Signer(keys[-1].private_key))
        self.service = LeaseService(
            storage,
            secret,
            config.limits,
            self.clock,
            self.cluster.worker,
            self.cluster.notify,
            backend.strategy,
        )
        self.tasks = Supervisor()
        self.tasks.add("leader", self._lead, LEAD_INTERVAL)
        self.tasks.add("sweeper", self._sweep, config.sweep_interval)
        self._swept_at: int | None = None  # the clock at the last sweep
        self.tasks.add("sealer", self._seal, config.checkpoint_interval)
        self._seal_lock = asyncio.Lock()  # one reader's sealing in flight per process
        self._turn = backend.seal_turn
        self._switch: tuple[SigningKey, int] | None = None  # a scheduled switch: key, instant
        self.tasks.add("keywatch", self.reload_keys, config.key_watch_interval)

    @classmethod
    def open(cls, config: RuntimeConfig) -> Runtime:
        """Open the ledger (``config.database``, else ``config.data_dir``) as a serving process
        and wire everything over it."""
        names = NameCodec(load_or_create_names_key(config.keys_dir))
        keys = keys_fingerprint(load_or_create_secret(config.keys_dir))
        backend = open_backend(config.database or config.data_dir, names=names, keys=keys)
        try:
            return cls(config, backend)
        except BaseException:
            backend.close()
            raise

    async def start(self) -> None:
        """Start the writer, record what expired while down, start the background tasks."""
        await self.service.start()
        self.cluster.listen(asyncio.get_running_loop(), self.service.wake)
        await self._lead()
        self.tasks.start()

    async def stop(self) -> None:
        """Stop the tasks, let every queued commit finish, close the storage."""
        await self.tasks.stop()
        await self.service.stop()
        self._backend.close(asyncio.get_running_loop())

    @property
    def healthy(self) -> bool:
        return self.service.healthy and self.tasks.healthy and not self.key_retired

    def health(self) -> dict[str, Any]:
        """Storage and background-task health; ``status`` is ``pass`` only if all are well."""
        ok = self.healthy
        return {
            "status": "pass" if ok else "unknown",
            "storage": "ok" if self.service.healthy else "unavailable",
            "tasks": self.tasks.as_data(),
            "keys": "retired" if self.key_retired else "ok",
        }

    async def readiness(self) -> dict[str, str]:
        """Whether this process can serve writes now: ``storage`` takes and commits a write
        transaction through the group committer, ``keys`` finds the signing key recorded as the
        log's active key, ``ledger`` reads the head of the tree. Each is ``ok`` or why not."""
        checks = {"storage": "ok", "keys": "ok", "ledger": "ok"}
        try:
            await self.service.durable(self.service.committer.submit([]))
        except Exception as error:  # any failure means not ready; say which
            checks["storage"] = f"not writable: {error}"
        active = {key.did for key in self.storage.signing_keys() if key.valid_until is None}
        if self.issuer.signer.did not in active or self.log.key.did not in active:
            checks["keys"] = "the signing key is not the log's active key"
        try:
            self.log.root(self.log.size())
        except Exception as error:
            checks["ledger"] = f"head unreadable: {error}"
        return checks

    async def publish_checkpoint(self) -> SignedCheckpoint:
        """Sign a checkpoint of everything durable so far (or reuse the latest if the tree has
        not grown) and store it durably before anyone sees it."""
        service = self.service
        await service.durable(service.committer.barrier())
        signed, change = self.log.checkpoint(self.signing_clock())
        if change is not None:
            await service.durable(service.committer.submit([change]))
        return signed

    async def checkpoint_covering(self, size: int | None = None) -> SignedCheckpoint:
        """The latest sealed checkpoint if it covers ``size`` entries (default: every entry
        durable now), else one sealed for the reader — at most one per ``SEAL_SPACING`` for all
        the worker processes of the ledger (every node's, on PostgreSQL) however many readers
        ask: they queue for the turn and share what it sealed."""
        async with self._seal_lock:
            want = self.log.size() if size is None else size
            latest = self.log.latest_checkpoint()
            if latest is not None and latest.tree_size >= want:
                return latest
            sealed_at = await self._take_turn()
            signed_at: float | None = None
            try:
                latest = self.log.latest_checkpoint()  # another worker's turn may have sealed it
                if latest is not None and latest.tree_size >= want:
                    return latest
                now = self.clock() / 1000
                await self.config.sleep(wait_before(sealed_at, SEAL_SPACING, now))
                signed = await self.publish_checkpoint()
                signed_at = self.clock() / 1000
                return signed
            finally:
                self._turn.give(signed_at)

    async def _take_turn(self) -> float:
        """The seal turn, waited for off the loop; a caller cancelled while waiting gives the
        turn back as soon as it comes (else the other workers' readers would wait forever)."""
        taking = asyncio.get_running_loop().run_in_executor(None, self._turn.take)
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            taking.add_done_callback(self._give_back)
            raise

    def _give_back(self, taking: asyncio.Future[float]) -> None:
        if not taking.cancelled() and taking.exception() is None:
            self._turn.give(None)

    async def reload_keys(self) -> None:
        """Sign with the newest key of the keys folder from now on, if it is new (`tenure keys
        rotate`; polled every ``key_watch_interval`` and on SIGHUP)."""
        newest = newest_key_file(self.config.keys_dir)
        if newest is None or newest == self.log.key.path:
            self.key_retired = self._switch is None and self._retired()
            return
        if self._switch is not None and newest == self._switch[0].path:
            return  # already scheduled
        try:
            key = load_signing_keys(self.config.keys_dir)[-1]
        except ValueError:  # a file still being written: the next round reads it whole
            return
        location = self.config.database or self.config.data_dir
        at = await asyncio.to_thread(rotation.record, location, self.clock, key)  # off the loop
        self._switch = (key, at)
        asyncio.get_running_loop().call_later(max(0, at - self.clock()) / 1000, self._take_over)

    def signing_clock(self) -> int:
        """The clock to date a signature with (a receipt, a checkpoint, a bundle): a key switch
        due by then is made first. Its timer may run a millisecond or more late, and a signature
        by the old key dated at or after the instant the keyring retired it would not verify."""
        now = self.clock()
        if self._switch is not None and now >= self._switch[1]:
            self._take_over()
        return now

    def _take_over(self) -> None:
        """Make the scheduled key switch (once: the timer or the first signature due after it)."""
        if self._switch is not None:
            (key, at), self._switch = self._switch, None
            rotation.switch(key, at, self.clock, self.issuer, self.log)

    def _retired(self) -> bool:
        """Whether the log retired this node's key (a rotation elsewhere); a database that
        cannot say leaves the answer as it was."""
        try:
            return rotation.retired(self.storage, self.log.key, self.clock()) is not None
        except StorageError:
            return self.key_retired

    async def _lead(self) -> None:
        """Take the lead if it is free (the sweeper and sealer run in the leader only), and as
        leader drop the waiters of worker processes that died. Off the loop: with PostgreSQL
        it is a round trip, or a connection attempt while the database is away."""
        if await asyncio.to_thread(self.cluster.try_lead):
            await self.service.durable(self.service.purge_dead_waiters(self.cluster.dead))

    async def _sweep(self) -> float | None:
        """One sweep, awaited: a failed commit makes the task report failing and back off. The
        next comes sooner while expiries come fast (``next_sweep_in``: a tick's worth of them
        in one group of the ledger's lock would hold up every call queued behind it)."""
        if not self.cluster.leader:
            return None
        now = self.clock()
        found: int = await self.service.durable(self.service.sweep(now))
        since, self._swept_at = self._swept_at, now
        seconds = 0.0 if since is None else (now - since) / 1000
        return next_sweep_in(found, seconds, self.config.sweep_interval)

    async def _seal(self) -> None:
        """Seal the log periodically, as transparency logs publish tree heads, so entries do not
        wait for a reader to ask before a signed checkpoint covers them."""
        if self.service.healthy and self.cluster.leader:
            await self.publish_checkpoint()


def _kept_origin(storage: Storage, host_name: str | None) -> str:
    """A log keeps the origin its checkpoints were signed under (witnesses and monitors know it
    by that name); a log without one yet takes the default, under ``host_name`` if given."""
    latest = storage.latest_checkpoint()
    if latest is not None:
        return latest.note.split("\n", 1)[0]
    return default_origin(storage.log_id(), host_name)
