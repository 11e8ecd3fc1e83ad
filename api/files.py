"""Durable file replacement for the monitor's state and published cosignatures: the one
writer of ``ledger/files.py`` (temporary file, fsync, rename, fsync the folder)."""

from __future__ import annotations

from ledger.files import WriteFailed, atomic_write, writing, writing_text

__all__ = ["WriteFailed", "atomic_write", "writing", "writing_text"]
