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
"""Bytes per read of :func:`warm_at_random`."""


def read_at_random(*paths: Path) -> int:
    """Turn readahead off on every descriptor this process holds of ``paths`` (SQLite's own,
    which it does not hand out) and drop the files' first :data:`HEAD` clean bytes from the
    cache (module doc); the number of descriptors changed. 0 where the platform has no
    ``posix_fadvise`` or no ``/proc/self/fd``: there the advice is only lost, nothing fails."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or not _FDS.is_dir():
        return 0
    wanted = {str(path.resolve()) for path in paths}
    changed = 0
    for entry in _FDS.iterdir():
        try:
            if os.readlink(entry) in wanted:
                advise(int(entry.name), 0, 0, os.POSIX_FADV_RANDOM)
                advise(int(entry.name), 0, HEAD, os.POSIX_FADV_DONTNEED)
                changed += 1
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
    return changed


def warm_at_random(path: Path) -> int:
    """Read ``path`` through once in :data:`CHUNK` reads with readahead off, so the page cache
    holds it page by page and a sequential reader after it (a backup) finds its pages there,
    where SQLite's own 4 KB reads without readahead would wait for the disk one page at a time
    (a cold 1 GB backup: 21–23 s so, 3.0–3.4 s after this). Bytes read (0 without
    ``posix_fadvise``). Only before this process opens ``path`` with SQLite: closing the
    descriptor read through drops every POSIX lock the process holds on the file, SQLite's
    included (``fcntl(2)``)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        advise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        buffer, read = bytearray(CHUNK), 0
        while done := os.readv(fd, [buffer]):
            read += done
        return read
    finally:
        os.close(fd)
