"""C2SP tlog-tiles paths, hash tiles and entry bundles (ledger/log/tiles.py), against the spec's
examples and a naive tree written plainly."""

from __future__ import annotations

import pytest

from ledger.log.tiles import (
    WIDTH,
    BadTilePath,
    NoSuchTile,
    Tile,
    entry_bundle,
    hash_tile,
    parse_tile_path,
    tiles_of,
)
from verify.rfc9162 import leaf_hash, node_hash


def naive_nodes(size: int) -> dict[tuple[int, int], bytes]:
    """Every perfect subtree hash of a tree of ``size`` leaves ``b"%d" % i``, level by level."""
    nodes = {(0, i): leaf_hash(b"%d" % i) for i in range(size)}
    level, width = 0, size
    while width > 1:
        width //= 2
        for i in range(width):
            nodes[level + 1, i] = node_hash(nodes[level, 2 * i], nodes[level, 2 * i + 1])
        level += 1
    return nodes


@pytest.mark.parametrize(
    ("path", "tile"),
    [
        ("0/000", Tile(0, 0, WIDTH)),
        ("0/x001/x234/067.p/1", Tile(0, 1234067, 1)),  # the spec's and Go's example
        ("3/x001/x234/067", Tile(3, 1234067, WIDTH)),
        ("entries/999.p/255", Tile(None, 999, 255)),
        ("63/x001/000", Tile(63, 1000, WIDTH)),
    ],
)
def test_paths_read_and_write_the_spec_encoding(path: str, tile: Tile) -> None:
    assert parse_tile_path(path) == tile
    assert tile.path() == f"tile/{path}"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("0/1", "3-digit groups"),
        ("0/x000/001", "canonical"),  # 1 has one spelling: 001
        ("0/001/x234", "3-digit groups"),
        ("00/000", "the level"),
        ("64/000", "the level must be a decimal integer 0..63"),
        ("-1/000", "the level"),
        ("data/000", "the level"),  # Go's sumdb name for entries, not C2SP's
        ("0/000.p/0", "width must be a decimal integer 1..255"),
        ("0/000.p/256", "width"),
        ("0/000.p/010", "width"),
        ("0/000.p/" + "9" * 5000, "width"),
        ("9" * 5000 + "/000", "the level"),
        ("0/" + "x999/" * 10 + "999", "at most"),
        ("0", "a tile path is"),
        ("", "a tile path is"),
        ("0/000/", "3-digit groups"),
    ],
)
def test_a_path_outside_the_grammar_is_refused_naming_the_rule(path: str, says: str) -> None:
    with pytest.raises(BadTilePath, match=says):
        parse_tile_path(path)


@pytest.mark.parametrize("size", [1, 2, 255, 256, 257, 511, 512, 700, 65536 + 3])
def test_hash_tiles_hold_the_level_8L_nodes_of_the_tree(size: int) -> None:
    nodes = naive_nodes(size)

    def get(level: int, index: int) -> bytes:
        return nodes[level, index]

    tiles = [tile for tile in tiles_of(size) if tile.level is not None]
    for tile in tiles:
        assert tile.level is not None
        first = tile.index * WIDTH
        want = [nodes[8 * tile.level, first + i] for i in range(tile.width)]
        assert hash_tile(tile, size, get) == b"".join(want)
    # every node of a level 8L is in exactly one tile
    for level in {tile.level for tile in tiles}:
        assert level is not None
        count = sum(tile.width for tile in tiles if tile.level == level)
        assert count == size >> (8 * level)


def test_a_tile_beyond_the_tree_is_missing_not_made_up() -> None:
    nodes = naive_nodes(300)

    def get(level: int, index: int) -> bytes:
        return nodes[level, index]

    assert len(hash_tile(Tile(0, 1, 44), 300, get)) == 44 * 32
    assert len(hash_tile(Tile(0, 1, 40), 300, get)) == 40 * 32  # an older tree's partial tile
    for tile in (Tile(0, 1, 45), Tile(0, 1, WIDTH), Tile(1, 0, 2), Tile(0, 2, 1)):
        with pytest.raises(NoSuchTile, match=tile.path()):
            hash_tile(tile, 300, get)


def test_tiles_of_a_tree_lists_full_then_partial_tiles_of_each_level() -> None:
    paths = [tile.path() for tile in tiles_of(513)]
    assert paths == [
        "tile/entries/000",
        "tile/entries/001",
        "tile/entries/002.p/1",
        "tile/0/000",
        "tile/0/001",
        "tile/0/002.p/1",
        "tile/1/000.p/2",
    ]
    assert list(tiles_of(0)) == []


def test_an_entry_bundle_is_uint16_big_endian_lengths_and_the_exact_bytes() -> None:
    leaves = [b"", b'{"a":1}', b"x" * 0x1234]
    bundle = entry_bundle(leaves)
    assert bundle == b"\x00\x00" + b'\x00\x07{"a":1}' + b"\x12\x34" + b"x" * 0x1234
    with pytest.raises(ValueError, match="uint16"):
        entry_bundle([b"x" * 0x10000])
