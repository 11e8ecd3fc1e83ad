"""``tenure export --tiles DIR``: the log as static C2SP tlog-tiles files any web server serves.

One export snapshot gives the checkpoint and every tile and entry bundle of its tree
(``ledger.log.tiles``), written with ``ledger.files`` (whole or not at all); the ``checkpoint``
file last, so a reader never sees a checkpoint whose tiles are not there yet. The checkpoint is
the latest stored one if it covers the snapshot, else one signed for the snapshot with the log's
key (not stored: the export stays a read); without a key, the latest stored one and its tree.

Exporting again into the same folder adds what the tree grew by. A folder that holds another
log's checkpoint, a larger tree's checkpoint (a static copy never goes backwards) or a file that
differs from what this log has at that path is refused before anything is written over.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ledger.files import WriteFailed, atomic_write
from ledger.keys.keyring import SigningKey
from ledger.location import default_origin
from ledger.log.checkpoint import checkpoint_body, sign_note
from ledger.log.merkle import root_at
from ledger.log.reading import LedgerReader
from ledger.log.tiles import WIDTH, Tile, entry_bundle, hash_tile, tiles_of
from ledger.storage import Snapshot, StorageError
from verify.compact import CompactRange
from verify.rfc9162 import leaf_hash

__all__ = ["CHECKPOINT", "FolderConflict", "export_tiles"]

CHECKPOINT = "checkpoint"
NO_KEY = "the ledger has no checkpoint yet and no signing key in --keys to sign one"
_SIZE = re.compile(r"[0-9]{1,20}")


class FolderConflict(Exception):
    """The folder holds something this log's tiles must not replace."""


def export_tiles(
    storage: LedgerReader, folder: Path, key: SigningKey | None, host_name: str | None = None
) -> int:
    """Write the checkpoint, tiles and entry bundles into ``folder``; return the tree size."""
    with storage.export_snapshot() as snapshot:
        size, origin, note = _stored_checkpoint(snapshot, key, host_name)
        _check_checkpoint(folder, origin, size)
        leaves = _write_bundles(snapshot, folder, size)
        for tile in tiles_of(size):
            if tile.level is not None:
                _put(folder, tile, hash_tile(tile, size, snapshot.node))
        if note is None:
            note = _signed(snapshot, leaves, origin, key)
        _make_parent(folder / CHECKPOINT)
        atomic_write(folder / CHECKPOINT, note.encode())
        return size


def _stored_checkpoint(
    snapshot: Snapshot, key: SigningKey | None, host_name: str | None
) -> tuple[int, str, str | None]:
    """The tree size to write, its origin and the stored note (None: one is signed for it)."""
    size, latest = snapshot.tree_size(), snapshot.latest_checkpoint()
    if latest is not None and (latest.tree_size == size or key is None):
        return latest.tree_size, _origin(latest.note), latest.note
    if key is None:
        raise FolderConflict(NO_KEY)
    origin = (
        default_origin(snapshot.log_id(), host_name) if latest is None else _origin(latest.note)
    )
    return size, origin, None


def _signed(snapshot: Snapshot, leaves: CompactRange, origin: str, key: SigningKey | None) -> str:
    """A checkpoint of the snapshot signed with the log's key, over the root of the entries
    written, which must be the stored tree's."""
    if key is None:
        raise FolderConflict(NO_KEY)
    root = leaves.root()
    if root != root_at(leaves.size, snapshot.node):
        raise StorageError("the stored tree does not match the stored entries")
    return sign_note(checkpoint_body(origin, leaves.size, root), origin, key.private_key)


def _write_bundles(snapshot: Snapshot, folder: Path, size: int) -> CompactRange:
    """Every entry bundle of the tree, streamed; the entries' compact range."""
    tree = CompactRange()
    for index, leaves in enumerate(_chunks(snapshot.entries(size))):
        for leaf in leaves:
            tree.append(leaf_hash(leaf))
        _put(folder, Tile(None, index, len(leaves)), entry_bundle(leaves))
    if tree.size != size:
        raise StorageError(f"the ledger holds {tree.size} of its {size} entries")
    return tree


def _chunks(entries: Iterator[tuple[int, bytes]]) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    for _, leaf in entries:
        chunk.append(leaf)
        if len(chunk) == WIDTH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _put(folder: Path, tile: Tile, data: bytes) -> None:
    """Write a tile unless the folder has it already; a different file there is refused."""
    path = folder / tile.path()
    try:
        present = path.read_bytes()
    except FileNotFoundError:
        _make_parent(path)
        atomic_write(path, data)
        return
    except OSError as error:
        raise WriteFailed(f"cannot read {path}: {error.strerror or error}") from error
    if present != data:
        raise FolderConflict(f"{path} holds another log's tile: give an empty folder")


def _check_checkpoint(folder: Path, origin: str, size: int) -> None:
    path = folder / CHECKPOINT
    try:
        present = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return
    except OSError as error:
        raise WriteFailed(f"cannot read {path}: {error.strerror or error}") from error
    if present[0] != origin:
        raise FolderConflict(f"{path} is of the log {present[0]!r}, not {origin!r}")
    if len(present) < 2 or not _SIZE.fullmatch(present[1]) or int(present[1]) > size:
        found = present[1] if len(present) > 1 else "?"
        raise FolderConflict(
            f"{path} is of a larger tree ({found}) than this ledger's ({size}):"
            " a static copy never goes backwards"
        )


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WriteFailed(f"cannot create {path.parent}: {error.strerror or error}") from error


def _origin(note: str) -> str:
    return note.split("\n", 1)[0]
