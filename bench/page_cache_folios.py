"""What a 4 KB write costs in the kernel after a file was read with readahead on, and off.

Not a test: prints figures (docs/decisions/0046). Writes a scratch file, then for each way of
reading it — ``sequential`` (readahead on, as ``cat`` or a backup reads) and ``random``
(``POSIX_FADV_RANDOM``, as ``ledger/sqlite/readahead.py`` leaves tenure's own reads) — drops
its clean pages, reads it through that way, and times random 4 KB ``pwrite`` calls into it: the
writes a WAL checkpoint makes into ``tenure.db``. On kernels whose ext4 caches files in large
folios (6.16 on) the first way costs several times the second.

    .venv/bin/python bench/page_cache_folios.py [--size-mb 1024] [--writes 20000] [--rounds 2]
                                                [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

PAGE = 4096
CHUNK = 1 << 20


def fill(path: Path, size: int) -> None:
    """A file of ``size`` random bytes, synced (so its pages are clean and can be dropped)."""
    with path.open("wb") as file:
        for _ in range(size // CHUNK):
            file.write(os.urandom(CHUNK))
        file.flush()
        os.fsync(file.fileno())


def read_through(path: Path, readahead: bool) -> float:
    """Drop the file's cached pages, read it in 1 MB reads; the seconds it took."""
    started = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if not readahead:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        while os.read(fd, CHUNK):
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - started


def write_pages(path: Path, size: int, writes: int, rng: random.Random) -> float:
    """CPU µs (this thread, kernel included) per random 4 KB ``pwrite`` into the file."""
    page = os.urandom(PAGE)
    offsets = [rng.randrange(size // PAGE) * PAGE for _ in range(writes)]
    fd = os.open(path, os.O_WRONLY)
    try:
        started = time.thread_time()
        for offset in offsets:
            os.pwrite(fd, page, offset)
        spent = time.thread_time() - started
        os.fsync(fd)
    finally:
        os.close(fd)
    return spent / writes * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--writes", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", type=Path, help="where the scratch file goes (a disk, not tmpfs)")
    args = parser.parse_args(argv)
    size, rng = args.size_mb * CHUNK, random.Random(1)
    with tempfile.TemporaryDirectory(prefix="folios-", dir=args.dir) as folder:
        path = Path(folder) / "pages.bin"
        fill(path, size)
        print(f"{os.uname().release}; {args.size_mb} MB file in {folder}", flush=True)
        for round_ in range(1, args.rounds + 1):
            for name, readahead in (("sequential", True), ("random", False)):
                took = read_through(path, readahead)
                cost = write_pages(path, size, args.writes, rng)
                print(
                    f"round {round_}: read {name:<10} ({took:5.1f} s), then {args.writes:,} "
                    f"random 4 KB writes: {cost:5.1f} µs CPU each",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
