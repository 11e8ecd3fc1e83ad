"""Readahead off for a ledger's files while one process reads them through (decisions/0046).

A sequential read of ``tenure.db`` (an online backup copies it page after page) makes the
kernel read ahead, and on kernels whose ext4 caches files in large folios (Linux 6.16 on) the
pages it reads stay cached in folios of up to 2 MB. A live server's checkpoints then write 4 KB
pages into those folios, and each such write costs several times the kernel CPU of a write into
a single page (~35–45 µs against ~3–8 on the test machine), as does the sync that follows, until
the pages leave the cache. ``POSIX_FADV_RANDOM`` on the reader's descriptors turns readahead off
for its reads: what it reads is cached page by page, as the server's own reads leave it.

The advice alone is not enough. SQLite reads the file's header while it opens it, before anyone
can advise its descriptor, and that read starts a readahead window whose last pages carry a mark:
a sequential reader that reaches the mark reads ahead again, advice or not. So the file's first
:data:`HEAD` bytes are dropped from the cache as well (clean pages only; they are read again on
demand), and the mark with them. Measured with SQLite's backup API on a 1 GB file: advised
alone, later 4 KB writes cost 31–48 µs of CPU each; advised with the head dropped, 2.6–3.0.
"""

from __future__ import annotations

import os
from pathlib import Path

_FDS = Path("/proc/self/fd")
HEAD = 1 << 20
"""Bytes at the start of a file dropped from the cache when it is advised: past the window a
one-page read at open starts (four pages)."""


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
