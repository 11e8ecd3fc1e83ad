"""Every file tenure writes (keys, state files, exports, cosignatures) is written here, durably.

A temporary file in the same folder is written in full, fsynced, renamed over the final name and
the folder fsynced: a full disk or a crash at any point leaves the old file (or none), never a
half-written one under the final name, and the error names the file.
"""

from __future__ import annotations

import io
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TextIO

__all__ = ["WriteFailed", "atomic_write", "create_once", "writing", "writing_text"]


class WriteFailed(OSError):
    """A file could not be written; the old one (or none) is still in place."""


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``: the old file or the new one, whatever fails."""
    with writing(path, mode) as out:
        out.write(data)


def create_once(path: Path, data: bytes, mode: int = 0o600) -> bool:
    """Create ``path`` holding ``data`` unless it exists (then False, and it is left alone):
    two processes creating one secret at once both end up reading the same file."""
    with _temporary(path, mode) as (tmp, out):
        out.write(data)
        _sync(out)
        return _publish(tmp, path, replace=False)


@contextmanager
def writing(path: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Stream bytes into ``path``; it is replaced only when the block ends without error."""
    with _temporary(path, mode) as (tmp, out):
        yield out
        _sync(out)
        _publish(tmp, path, replace=True)


@contextmanager
def writing_text(path: Path, mode: int = 0o644) -> Iterator[TextIO]:
    """:func:`writing` for UTF-8 text (exports)."""
    with writing(path, mode) as raw:
        out = io.TextIOWrapper(raw, encoding="utf-8")
        try:
            yield out
        finally:
            out.flush()
            out.detach()


@contextmanager
def _temporary(path: Path, mode: int) -> Iterator[tuple[Path, BinaryIO]]:
    """A new temporary file beside ``path``, removed afterwards; OSError becomes WriteFailed."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with open(fd, "wb") as out:
            yield tmp, out
    except OSError as error:
        raise _failed(path, error) from error
    finally:
        tmp.unlink(missing_ok=True)


def _sync(out: BinaryIO) -> None:
    out.flush()
    os.fsync(out.fileno())


def _publish(tmp: Path, path: Path, replace: bool) -> bool:
    """Rename (or, not replacing, link) ``tmp`` to ``path`` and sync the folder; False if
    ``path`` existed and was kept."""
    if replace:
        os.replace(tmp, path)
    else:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _failed(path: Path, error: OSError) -> WriteFailed:
    if isinstance(error, WriteFailed):
        return error
    failed = WriteFailed(f"cannot write {path}: {error.strerror or error}; nothing was replaced")
    failed.errno = error.errno
    return failed
