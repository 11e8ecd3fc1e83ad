"""C2SP tlog-tiles (https://c2sp.org/tlog-tiles): tile paths, hash tiles and entry bundles.

A hash tile at level ``L`` and index ``N`` lists, 32 bytes each, the hashes of the tree's nodes
at level ``8 * L`` numbered ``256 * N`` onwards: 256 in a full tile, ``W`` (1..255) in a partial
one (``.p/W``). An entry bundle holds the entries of the level-0 tile of the same index, each a
big-endian uint16 length and the leaf bytes exactly as hashed (RFC 9162 §2.1.1). ``N`` is written
three digits at a time, all groups but the last ``x``-prefixed: 1234067 is ``x001/x234/067``.

Pure: nodes come from a ``get(level, idx)`` callable (``ledger.log.merkle``). A path outside the
grammar raises :class:`BadTilePath` (400); a tile the tree has not grown to, :class:`NoSuchTile`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from verify.compact import NodeGetter

__all__ = [
    "HEIGHT",
    "MAX_LEVEL",
    "WIDTH",
    "BadTilePath",
    "NoSuchTile",
    "Tile",
    "entry_bundle",
    "entry_range",
    "hash_tile",
    "parse_tile_path",
    "tiles_of",
]

HEIGHT = 8
WIDTH = 1 << HEIGHT
MAX_LEVEL = 63
MAX_INDEX = (1 << 63) - 1
"""No tree this side of uint64 has a tile beyond it; the path grammar stops there."""
MAX_ENTRY = 0xFFFF
"""An entry bundle's length prefix is a uint16."""

_GROUP = re.compile(r"x?[0-9]{3}")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


class BadTilePath(ValueError):
    """A path that is not ``<L>/<N>[.p/<W>]`` or ``entries/<N>[.p/<W>]`` in C2SP's encoding."""


class NoSuchTile(LookupError):
    """A well-formed tile the tree does not hold (yet)."""


@dataclass(frozen=True, slots=True)
class Tile:
    """A hash tile (``level`` 0..63) or, with ``level`` None, an entry bundle."""

    level: int | None
    index: int
    width: int

    @property
    def full(self) -> bool:
        return self.width == WIDTH

    def path(self) -> str:
        """``tile/<L>/<N>[.p/<W>]`` or ``tile/entries/<N>[.p/<W>]``, relative to the log."""
        level = "entries" if self.level is None else str(self.level)
        partial = "" if self.full else f".p/{self.width}"
        return f"tile/{level}/{_encode_index(self.index)}{partial}"

    def nodes_needed(self) -> int:
        """How many nodes of its level the tree must have for this tile to exist."""
        return self.index * WIDTH + self.width


def parse_tile_path(path: str) -> Tile:
    """The tile named by ``path`` (what follows ``tile/``), strictly: one spelling per tile."""
    parts = path.split("/")
    width = WIDTH
    if len(parts) >= 3 and parts[-2].endswith(".p"):
        width = _decimal(parts.pop(), 1, WIDTH - 1, "a partial tile's width")
        parts[-1] = parts[-1].removesuffix(".p")
    if len(parts) < 2:
        raise BadTilePath("a tile path is <level>/<index>[.p/<width>] or entries/<index>[…]")
    level = None if parts[0] == "entries" else _decimal(parts[0], 0, MAX_LEVEL, "the level")
    tile = Tile(level, _decode_index(parts[1:]), width)
    if tile.path() != f"tile/{path}":
        raise BadTilePath(f"not the canonical spelling of the tile: {tile.path()}")
    return tile


def hash_tile(tile: Tile, size: int, get: NodeGetter) -> bytes:
    """The hash tile's bytes in the tree of ``size`` leaves, from its stored nodes."""
    if tile.level is None:
        raise ValueError("an entry bundle is not a hash tile")
    _require_grown(tile, size >> (HEIGHT * tile.level))
    level, first = HEIGHT * tile.level, tile.index * WIDTH
    return b"".join(get(level, first + i) for i in range(tile.width))


def entry_range(tile: Tile, size: int) -> tuple[int, int]:
    """The entries ``[start, end)`` an entry bundle holds, once the tree has them all."""
    _require_grown(tile, size)
    start = tile.index * WIDTH
    return start, start + tile.width


def entry_bundle(leaves: Iterable[bytes]) -> bytes:
    """The bundle of ``leaves``: each a big-endian uint16 length, then its bytes."""
    out = bytearray()
    for leaf in leaves:
        if len(leaf) > MAX_ENTRY:
            raise ValueError(f"an entry of {len(leaf)} bytes does not fit a uint16 length")
        out += len(leaf).to_bytes(2, "big")
        out += leaf
    return bytes(out)


def tiles_of(size: int) -> Iterator[Tile]:
    """Every hash tile and entry bundle of the tree of ``size`` leaves: full ones, then the
    partial one of each level, entry bundles first and then level by level."""
    yield from _level_tiles(None, size)
    level = 0
    while size >> (HEIGHT * level):
        yield from _level_tiles(level, size >> (HEIGHT * level))
        level += 1


def _level_tiles(level: int | None, nodes: int) -> Iterator[Tile]:
    full, rest = divmod(nodes, WIDTH)
    for index in range(full):
        yield Tile(level, index, WIDTH)
    if rest:
        yield Tile(level, full, rest)


def _require_grown(tile: Tile, nodes: int) -> None:
    if nodes < tile.nodes_needed():
        raise NoSuchTile(f"the tree has no {tile.path()} yet")


def _encode_index(index: int) -> str:
    groups = [f"{index % 1000:03d}"]
    while index >= 1000:
        index //= 1000
        groups.append(f"x{index % 1000:03d}")
    return "/".join(reversed(groups))


def _decode_index(groups: list[str]) -> int:
    if len(groups) > len(_encode_index(MAX_INDEX).split("/")):
        raise BadTilePath(f"a tile index must be at most {MAX_INDEX}")
    index = 0
    for position, group in enumerate(groups):
        last = position == len(groups) - 1
        if not _GROUP.fullmatch(group) or group.startswith("x") == last:
            raise BadTilePath("a tile index is 3-digit groups, every one but the last x-prefixed")
        index = index * 1000 + int(group.removeprefix("x"))
    if index > MAX_INDEX:
        raise BadTilePath(f"a tile index must be at most {MAX_INDEX}")
    return index


def _decimal(text: str, low: int, high: int, what: str) -> int:
    if len(text) > 20 or not _DECIMAL.fullmatch(text) or not low <= int(text) <= high:
        raise BadTilePath(f"{what} must be a decimal integer {low}..{high}")
    return int(text)
