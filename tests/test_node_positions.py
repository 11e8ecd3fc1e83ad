"""Schema step 6 (docs/decisions/0016): SQLite keys each tree node by its post-order position, so
the nodes a commit writes are appended — and a ledger written before it moves over when opened,
every node's hash kept, its roots and proofs unchanged, the log carrying on."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.backends import open_storage
from ledger.lease.calls import LeaseCall, Limits
from ledger.log.merkle import inclusion_proof, root_at
from ledger.sqlite.positions import node_position
from ledger.sqlite.schema import DB_NAME, SCHEMA_VERSION
from ledger.storage import Storage
from ledger.writer.service import LeaseService
from tests.names_key import NAMES, unkeyed_fingerprints
from tests.test_state_table import SECRET, START, _write_some
from verify.rfc9162 import leaf_hash, verify_inclusion


def _created_in_order(leaves: int) -> list[tuple[int, int]]:
    """The nodes an append-only log completes as it appends ``leaves`` leaves, in that order:
    each leaf, then every subtree it closes, smallest first."""
    made = []
    for leaf in range(leaves):
        made.append((0, leaf))
        level = 0
        while (leaf + 1) % (2 ** (level + 1)) == 0:
            level += 1
            made.append((level, (leaf + 1) // 2**level - 1))
    return made


@given(st.integers(min_value=1, max_value=3000))
def test_positions_number_the_nodes_in_the_order_they_are_completed(leaves: int) -> None:
    """0, 1, 2, …: unique, and every node written lands after every node written before it."""
    made = _created_in_order(leaves)
    assert [node_position(level, index) for level, index in made] == list(range(len(made)))


def _grant_more(storage: Storage) -> None:
    async def run() -> None:
        service = LeaseService(storage, SECRET, limits=Limits(), clock=lambda: START)
        await service.start()
        for name in ("more-1", "more-2", "more-3"):
            answer = await service.lease(LeaseCall("acquire", "t", name, holder="h"))
            assert answer.data["outcome"] == "GRANTED"
        await service.stop()

    asyncio.run(run())


def _nodes(storage: Storage) -> dict[tuple[int, int], bytes]:
    with storage.transaction() as tx:
        size = tx.tree_size()
        return {
            (level, index): tx.node(level, index)
            for level in range(size.bit_length())
            for index in range(size >> level)
        }


def _back_to_step_5(path: Path, nodes: dict[tuple[int, int], bytes]) -> None:
    """Rewrite ``tree_nodes`` as schema step 1 made it and step 5 left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DROP TABLE tree_nodes")
    conn.execute(
        "CREATE TABLE tree_nodes(level INTEGER NOT NULL, idx INTEGER NOT NULL, "
        "hash BLOB NOT NULL, PRIMARY KEY(level, idx)) WITHOUT ROWID"
    )
    rows = [(level, index, digest) for (level, index), digest in nodes.items()]
    conn.executemany("INSERT INTO tree_nodes VALUES (?, ?, ?)", rows)
    for action in ("UPDATE", "DELETE"):
        conn.execute(
            f"CREATE TRIGGER tree_nodes_no_{action.lower()} BEFORE {action} ON tree_nodes "
            "BEGIN SELECT RAISE(ABORT, 'tree_nodes is append-only'); END"
        )
    unkeyed_fingerprints(conn, "state", "f")
    conn.execute("PRAGMA user_version = 5")
    conn.execute("COMMIT")
    conn.close()


def test_a_step_5_ledger_keys_its_nodes_by_position_and_carries_on(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, names=NAMES)
    _write_some(storage)  # five grants and a completion: six entries
    before = _nodes(storage)
    storage.close()
    _back_to_step_5(tmp_path / DB_NAME, before)

    storage = open_storage(tmp_path)  # no names key: this step needs none
    try:
        with sqlite3.connect(tmp_path / DB_NAME) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            assert version == 6 == SCHEMA_VERSION - 1  # step 7 keys digests: it needs the key
            columns = [row[1] for row in conn.execute("PRAGMA table_info(tree_nodes)")]
            assert columns == ["pos", "hash"]
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute("DELETE FROM tree_nodes")
        assert _nodes(storage) == before
        size = storage.tree_size()
        root = root_at(size, storage.node)
        for index in range(size):
            entry = storage.entry(index)
            assert entry is not None
            proof = inclusion_proof(index, size, storage.node)
            verify_inclusion(index, size, leaf_hash(entry), proof, root)
    finally:
        storage.close()
    storage = open_storage(tmp_path, names=NAMES)
    try:
        _grant_more(storage)  # the log goes on: its new nodes follow the moved ones
        after = _nodes(storage)
        assert {key: after[key] for key in before} == before and len(after) > len(before)
    finally:
        storage.close()
