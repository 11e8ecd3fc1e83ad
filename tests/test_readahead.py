"""Readahead off for a reader of a live ledger (ledger/sqlite/readahead.py, decisions/0046): the
advice reaches SQLite's own descriptors; a read through an advised descriptor caches only the
pages it asked for, where readahead would cache more; a ledger connection's first reads leave
no readahead window behind; a file read through is cached whole (``mincore(2)`` on real
files)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from ledger.sqlite.readahead import read_at_random, warm_at_random
from ledger.sqlite.schema import connect

PAGE = mmap.PAGESIZE
PAGES = 256

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="posix_fadvise and /proc/self/fd: Linux"
)


def test_the_advice_reaches_sqlite_s_own_descriptors(tmp_path: Path) -> None:
    db, wal = tmp_path / "tenure.db", tmp_path / "tenure.db-wal"
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t(x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        assert wal.exists()
        assert read_at_random(db, wal) == 2  # the database's descriptor and the WAL's
        assert read_at_random(db) == 1
        assert read_at_random(tmp_path / "other.db") == 0
    finally:
        conn.close()
    assert read_at_random(db, wal) == 0  # closed: nothing of them is held


def test_a_read_with_readahead_off_caches_only_what_it_read(tmp_path: Path) -> None:
    path = tmp_path / "pages.bin"
    path.write_bytes(os.urandom(PAGE * PAGES))
    fd = _uncached(path)
    try:
        os.pread(fd, PAGE, 0)  # readahead on: the kernel reads past the one page asked for
        ahead = _resident(fd)
        assert ahead > 1, f"readahead cached {ahead} page(s) for a one-page read"

        assert _resident_after_drop(fd) == 0
        assert read_at_random(path) == 1
        os.pread(fd, PAGE, 0)
        assert _resident(fd) == 1
    finally:
        os.close(fd)


def test_a_ledger_connection_caches_only_the_pages_sqlite_reads(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    made = sqlite3.connect(path)
    made.execute("PRAGMA journal_mode=WAL")
    made.execute("CREATE TABLE t(x BLOB)")
    made.executemany("INSERT INTO t VALUES (?)", [(os.urandom(3000),) for _ in range(PAGES)])
    made.commit()
    made.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    made.close()
    fd = _uncached(path)
    try:
        plain = sqlite3.connect(path)  # readahead on: its first reads start a window
        plain.execute("SELECT length(x) FROM t WHERE rowid = ?", (PAGES - 1,)).fetchone()
        plain.close()
        window = _resident(fd)

        assert _resident_after_drop(fd) == 0
        conn = connect(path)
        conn.execute("SELECT length(x) FROM t WHERE rowid = ?", (PAGES - 1,)).fetchone()
        conn.close()
        asked = _resident(fd)
        assert asked <= 4, f"{asked} pages cached for the header and one row's path"
        assert window > asked, f"readahead cached {window} pages, readahead off {asked}"
    finally:
        os.close(fd)


def test_a_file_read_through_is_cached_whole(tmp_path: Path) -> None:
    """What a backup reads next is there: read through on SQLite's own descriptor (no
    descriptor opened or closed beside its locks), or on one of its own (a WAL)."""
    path = tmp_path / "tenure.db"
    path.write_bytes(os.urandom(PAGE * PAGES))
    fd = _uncached(path)
    try:
        conn = sqlite3.connect(path)  # SQLite holds a descriptor of it
        try:
            assert read_at_random(path, through=True) == 2  # SQLite's and this test's
            assert _resident(fd) == PAGES
        finally:
            conn.close()
        assert _resident_after_drop(fd) == 0
        assert warm_at_random(path) == PAGE * PAGES
        assert _resident(fd) == PAGES
    finally:
        os.close(fd)


def _uncached(path: Path) -> int:
    """A descriptor of ``path``, its pages synced and dropped from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    if _resident_after_drop(fd) > 0:
        os.close(fd)
        pytest.skip("this file system keeps a file's clean pages cached (tmpfs)")
    return fd


def _resident_after_drop(fd: int) -> int:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return _resident(fd)


def _resident(fd: int) -> int:
    """How many of the file's pages the page cache holds: ``mincore(2)`` on a mapping of it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = PAGE * PAGES
    address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        pytest.skip(f"mmap: {os.strerror(ctypes.get_errno())}")
    try:
        vector = (ctypes.c_ubyte * PAGES)()
        if libc.mincore(address, size, vector) != 0:
            pytest.skip(f"mincore: {os.strerror(ctypes.get_errno())}")
        return sum(byte & 1 for byte in vector)
    finally:
        libc.munmap(address, size)
