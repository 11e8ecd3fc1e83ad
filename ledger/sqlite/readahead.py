"""Readahead off for the ledger's files while this process reads them (decisions/0046).

On kernels whose ext4 caches files in large folios (Linux 6.16 on), a sequential read of
``tenure.db`` (a backup, an export) leaves it cached in folios of up to 2 MB, and every 4 KB page
a server's checkpoint later writes into one costs several times the kernel CPU. With
``POSIX_FADV_RANDOM`` on the reader's descriptors, what it reads is cached page by page, as the
server's own reads leave it. SQLite reads the header while it opens a file, before its
descriptor can be advised, and the readahead window that read starts would keep a sequential
reader reading ahead whatever the advice: so the file's first :data:`HEAD` clean bytes are
dropped from the cache too (they are read again on demand), and the window's mark with them.
"""

from __future__ import annotations

import os
from pathlib import Path

_FDS = Path("/proc/self/fd")
HEAD = 1 << 20
"""Bytes at the start of a file dropped from the cache when it is advised: past the window a
one-page read at open starts (four pages)."""
CHUNK = 1 << 20
"""Bytes per read when a file is read through (:func:`read_at_random`, :func:`warm_at_random`)."""


def read_at_random(*paths: Path, through: bool = False) -> int:
    """Turn readahead off on every descriptor this process holds of ``paths`` (SQLite's own,
    which it does not hand out) and drop the files' first :data:`HEAD` clean bytes from the
    cache (module doc); with ``through``, also read each file through once, in :data:`CHUNK`
    reads on that descriptor, so a sequential reader after it (a backup) finds every page
    cached, where SQLite's own 4 KB reads without readahead would wait for the disk one page
    at a time (a cold 1 GB backup: 21–23 s so). No descriptor is opened or closed here, so
    none of SQLite's POSIX locks can drop (``fcntl(2)``). The number of descriptors changed;
    0 where the platform has no ``posix_fadvise`` or no ``/proc/self/fd``: there the advice
    is only lost, nothing fails."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or not _FDS.is_dir():
        return 0
    wanted = {str(path.resolve()) for path in paths}
    found: dict[str, int] = {}  # each file's last descriptor: read through once, advised all
    changed = 0
    for entry in _FDS.iterdir():
        try:
            target = os.readlink(entry)
            if target in wanted:
                advise(int(entry.name), 0, 0, os.POSIX_FADV_RANDOM)
                advise(int(entry.name), 0, HEAD, os.POSIX_FADV_DONTNEED)
                found[target] = int(entry.name)
                changed += 1
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
    if through:
        for fd in found.values():
            _read_through(fd)
    return changed


def warm_at_random(path: Path) -> int:
    """Read ``path`` through once with readahead off, on a descriptor of its own; bytes read
    (0 without ``posix_fadvise``). For a file no SQLite connection of this process locks — the
    WAL, which SQLite never locks, or any file before SQLite opens it: closing the descriptor
    drops every POSIX lock the process holds on the file (``fcntl(2)``)."""
    if getattr(os, "posix_fadvise", None) is None:
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return _read_through(fd)
    finally:
        os.close(fd)


def _read_through(fd: int) -> int:
    """Read the file of ``fd`` from its start in :data:`CHUNK` reads (``pread``: its offset,
    which SQLite never uses, stays); bytes read."""
    buffer, read = bytearray(CHUNK), 0
    while done := os.preadv(fd, [buffer], read):
        read += done
    return read
