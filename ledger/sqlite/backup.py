"""A verified copy of a SQLite ledger folder, taken online with SQLite's backup API.

The copy is one step of ``sqlite3.Connection.backup``: one read transaction, so it is the
ledger as of one commit while a server keeps writing (a WAL reader blocks no writer). It is
written into a temporary folder beside the destination, fsynced, exported and audited against
the keys folder as ``tenure audit`` would (``ledger/log/export.py``, ``verify.audit``), and only
then
renamed into place: a copy that fails its audit is removed, and a process killed at any point
leaves no destination (the next copy removes a dead one's temporary folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from io import TextIOWrapper
from pathlib import Path
from urllib.parse import quote

from ledger.files import create_once
from ledger.keys.keyring import KeyFileError, SigningKey, load_signing_keys
from ledger.location import HOST_NAME_VARIABLE
from ledger.log.export import export_ledger
from ledger.sqlite.cluster import KEYS_FILE
from ledger.sqlite.readahead import read_at_random
from ledger.sqlite.readonly import ReadOnlyLedger
from ledger.sqlite.schema import DB_NAME
from ledger.storage import StorageError
from verify.audit import audit, parse_lines
from verify.errors import MalformedInput

__all__ = ["CopyRefused", "copy_ledger"]

PARTIAL = ".partial-"


class CopyRefused(StorageError):
    """The copy could not be taken or did not audit; nothing was left at the destination."""


def copy_ledger(
    source: Path, dest: Path, keys_dir: Path, then: Callable[[Path], None] | None = None
) -> int:
    """Copy the ledger folder ``source`` to ``dest`` (absent or an empty folder), verified
    against the signing keys in ``keys_dir``; returns the copy's entry count. ``then`` runs on
    the verified copy before it appears (a restore's fencing floor)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_partials(dest)
    work = dest.parent / f".{dest.name}{PARTIAL}{os.getpid()}"
    work.mkdir(mode=0o700)
    try:
        _backup_database(source / DB_NAME, work / DB_NAME)
        fingerprint = source / KEYS_FILE
        if fingerprint.is_file():
            create_once(work / KEYS_FILE, fingerprint.read_bytes(), 0o644)
        _fsync(work)
        entries = _audit_copy(work, keys_dir)
        if then is not None:
            then(work)
            _fsync(work)
        os.rename(work, dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    _fsync(dest.parent)
    return entries


def _backup_database(source: Path, target: Path) -> None:
    """The whole database in one backup step (one snapshot), fsynced, its WAL merged. Read
    through first with readahead off, on SQLite's own descriptors, so a server still writing
    the ledger does not pay for the copy's reads in every checkpoint after it
    (``ledger/sqlite/readahead.py``)."""
    if not source.is_file():
        raise CopyRefused(f"no ledger in {source.parent} (no {DB_NAME})")
    os.close(os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    uri = f"file:{quote(str(source.resolve()))}?mode=ro"
    try:
        source_db = sqlite3.connect(uri, uri=True, timeout=30)
        with (
            contextlib.closing(source_db) as src,
            contextlib.closing(sqlite3.connect(target)) as dst,
        ):
            read_at_random(source, through=True)  # before any statement (its docstring)
            src.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # its WAL opened, if any
            read_at_random(source.with_name(DB_NAME + "-wal"), through=True)
            src.backup(dst)  # pages=-1: every page in one step, under one read transaction
            dst.execute("PRAGMA journal_mode=DELETE")  # the copy stands alone: no WAL
    except sqlite3.Error as error:
        raise CopyRefused(f"cannot copy the ledger in {source.parent}: {error}") from error
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _audit_copy(folder: Path, keys_dir: Path) -> int:
    """Export the copy and audit the export, trusting only the keys folder's keys; the entry
    count if every check passes, else ``CopyRefused`` saying why."""
    try:
        keys = load_signing_keys(keys_dir) if keys_dir.is_dir() else []
    except KeyFileError as error:
        raise CopyRefused(str(error)) from error
    if not keys:
        raise CopyRefused(f"no signing key in {keys_dir} (--keys): the copy cannot be verified")
    try:
        storage = ReadOnlyLedger.open(folder)
    except StorageError as error:
        raise CopyRefused(str(error)) from error
    with tempfile.TemporaryFile("w+b") as raw:
        text = TextIOWrapper(raw, encoding="utf-8", newline="\n")
        try:
            size = export_ledger(storage, text, signer=_signer(storage, keys), host_name=_host())
        except StorageError as error:  # its tree and entries disagree: an audit's finding too
            raise CopyRefused(f"the copy does not audit: {error}") from error
        finally:
            storage.close()
        text.flush()
        raw.seek(0)
        try:
            report = audit(parse_lines(raw), [key.did for key in keys])
        except MalformedInput as error:
            raise CopyRefused(f"the copy's export cannot be read: {error}") from error
        text.detach()
    problems = [str(violation) for violation in report.violations]
    if report.entries != size:
        problems.append(f"{report.entries} of the copy's {size} entries were audited")
    if problems:
        raise CopyRefused("the copy does not audit: " + "; ".join(problems[:5]))
    return size


def _signer(storage: ReadOnlyLedger, keys: list[SigningKey]) -> tuple[SigningKey, int] | None:
    """The folder's key the log signs with now: the export's final checkpoint is signed by it."""
    active = {key.did for key in storage.signing_keys() if key.valid_until is None}
    key = next((key for key in reversed(keys) if key.did in active), None)
    return None if key is None else (key, time.time_ns() // 1_000_000)


def _host() -> str | None:
    return os.environ.get(HOST_NAME_VARIABLE)


def _fsync(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_dead_partials(dest: Path) -> None:
    """Temporary folders of copies whose process died (kill -9): their pid no longer runs."""
    for folder in dest.parent.glob(f".{dest.name}{PARTIAL}*"):
        pid = folder.name.rpartition(PARTIAL)[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
