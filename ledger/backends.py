"""Opening a ledger: the one place that chooses a backend by where the ledger lives.

A ``postgresql://`` URL is the PostgreSQL backend (``ledger/postgres/``, the ``[postgres]``
extra); anything else is a SQLite folder (``ledger/sqlite/``), created if needed. Nothing else
imports either package: the rest of ``ledger/`` knows the seam (``ledger/storage.py``), the
membership (``ledger/membership.py``) and the seal turn (``ledger/writer/sealturn.py``) only.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledger.keys.names import NameCodec
from ledger.location import is_database_url
from ledger.log.reading import LedgerReader
from ledger.membership import Membership
from ledger.storage import Gauges, Storage, StorageError
from ledger.writer.sealturn import SealTurn
from ledger.writer.strategy import WriterStrategy
from ledger.writer.strategy import writer_strategy as writer_strategy


@dataclass(frozen=True, slots=True)
class Backend:
    """What the runtime serves a ledger with: its storage, this process's membership among the
    processes serving it, the readers' seal turn, the writer's hooks and the gauges."""

    storage: Storage
    membership: Membership
    seal_turn: SealTurn
    strategy: WriterStrategy
    gauges: Gauges

    def close(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Leave the membership, let go of the turn, close the storage."""
        try:
            self.membership.close(loop)
            self.seal_turn.close()
        finally:
            self.storage.close()


def open_backend(location: Path | str, *, names: NameCodec | None, keys: str) -> Backend:
    """Open the ledger at ``location`` as a serving process. ``names``: the names key's codec
    (:func:`open_storage`); ``keys``: this process's keys fingerprint — a ledger first served
    with another keys folder is refused (a :class:`StorageError`)."""
    storage = open_storage(location, names=names)
    try:
        membership = open_membership(location, keys)
        try:
            turn = open_seal_turn(location)
        except BaseException:
            membership.close()
            raise
    except BaseException:
        storage.close()
        raise
    return Backend(storage, membership, turn, writer_strategy(storage), gauges(storage))


def open_storage(location: Path | str, *, names: NameCodec | None = None) -> Storage:
    """The ledger's storage. ``names``: the names key's codec (docs/decisions/0010); without it
    the state tables (leases, resources, waits) cannot be read or written, and a ledger whose
    names are not sealed yet stays as it is."""
    if is_database_url(location):
        _require_psycopg()
        from ledger.postgres.backend import PostgresStorage

        return PostgresStorage.open(str(location), names=names)
    from ledger.sqlite.backend import SQLiteStorage

    return SQLiteStorage.open(Path(location), names)


def storage_exists(location: Path | str) -> bool:
    """Whether ``location`` (a SQLite folder or a ``postgresql://`` URL) already holds a ledger."""
    if is_database_url(location):
        _require_psycopg()
        from ledger.postgres.backend import exists as postgres_exists

        return postgres_exists(str(location))
    from ledger.sqlite.backend import exists

    return exists(Path(location))


def open_for_reading(location: Path | str) -> LedgerReader:
    """The ledger at ``location`` only to read it (``tenure export``, ``tenure apikey list``): a
    SQLite folder this process cannot write (an auditor's read-only backup) is opened read-only
    instead of created, migrated and chmod-ed as a server opens it."""
    if is_database_url(location):
        return open_storage(location)
    from ledger.sqlite.readonly import ReadOnlyLedger, writable

    if writable(Path(location)):
        return open_storage(location)
    return ReadOnlyLedger.open(Path(location))


def open_tenant_names(location: Path | str, names: NameCodec) -> Callable[[str], list[str]]:
    """A read of one tenant's resource names, on a connection of its own: a watch names the
    entries it sends with it (``ledger/lease/watch_names.py``)."""
    if is_database_url(location):
        from ledger.postgres.tenant_names import reader as postgres_reader

        return postgres_reader(str(location), names)
    from ledger.sqlite.tenant_names import reader

    return reader(Path(location), names)


def open_membership(location: Path | str, keys: str) -> Membership:
    """This process's membership among those serving the ledger at ``location``
    (``ledger/membership.py``); ``keys`` as :func:`open_backend`."""
    if is_database_url(location):
        from ledger.postgres.membership import PostgresMembership

        return PostgresMembership(str(location), keys)
    from ledger.sqlite.cluster import Cluster

    return Cluster(Path(location), keys)


def open_seal_turn(location: Path | str) -> SealTurn:
    """The readers' seal turn, shared by every process serving the ledger at ``location``."""
    if is_database_url(location):
        from ledger.postgres.sealturn import DatabaseTurn

        return DatabaseTurn(str(location))
    from ledger.sqlite.cluster import RUN_DIR
    from ledger.sqlite.sealturn import TURN_FILE, HostTurn

    return HostTurn(Path(location) / RUN_DIR / TURN_FILE)


def claim_keys(data_dir: Path, fingerprint: str) -> None:
    """Bind the SQLite folder ``data_dir`` to the keys folder of ``fingerprint``, or raise
    :class:`ValueError` if another claimed it first (``ledger/sqlite/cluster.py``)."""
    from ledger.sqlite.cluster import claim_keys as claim

    claim(data_dir, fingerprint)


def copy_ledger(
    source: Path, dest: Path, keys_dir: Path, then: Callable[[Path], None] | None = None
) -> int:
    """A copy of the SQLite ledger folder ``source`` as ``dest``, taken online and audited
    against ``keys_dir`` before it appears (``then`` runs on it first); its entry count.
    ``StorageError`` saying why not (``ledger/sqlite/backup.py``)."""
    from ledger.sqlite.backup import copy_ledger as copy

    return copy(source, dest, keys_dir, then)


def served(data_dir: Path) -> bool:
    """Whether a live process serves the SQLite ledger folder ``data_dir`` now."""
    from ledger.sqlite.cluster import serving

    return serving(data_dir)


def gauges(storage: Storage) -> Gauges:
    """The storage's gauges (metrics); every backend offers them."""
    if not isinstance(storage, Gauges):
        raise StorageError(f"{type(storage).__name__} offers no gauges")
    return storage


def _require_psycopg() -> None:
    """The PostgreSQL backend needs the ``[postgres]`` extra: say so rather than a traceback."""
    for module in ("psycopg", "psycopg_pool"):
        if importlib.util.find_spec(module) is None:
            raise StorageError(
                f"a postgresql:// ledger needs {module}: pip install 'tenure[postgres]'"
            )
