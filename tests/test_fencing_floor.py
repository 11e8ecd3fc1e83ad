"""A restore keeps fencing tokens strictly increasing: the fencing floor (docs/decisions/0040).

Real servers over sockets, real SQLite files: a copy taken under load, more grants after it on
old and new resources, the copy restored with the lost log's size, and every grant of the
restored server above every token handed out before — its ledger still audits. A restore
without the size, or with one below the copy's, is refused; the floor never lowers;
`tenure fence-floor` on a PostgreSQL ledger; the rule itself in the pure machine."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from ledger.keys.keyring import load_signing_keys
from ledger.lease import leases
from ledger.lease.leases import AcquireArgs, Outcome, Resource
from tests.conftest import Server, lease, ledger_size, rid
from tests.test_backup import Load, acquire, audited_leaves, backup, tenure

NOW_MS = 1_767_225_600_000  # a fixed clock


def take(client: httpx.Client, resource: str, issued: dict[str, int]) -> int:
    """Grant and release ``resource``; its token, noted in ``issued``."""
    taken = acquire(client, resource)
    token = int(str(taken["fencingToken"]))
    lease(client, "release", resource=resource, ownerToken=taken["ownerToken"])
    issued[resource] = max(issued.get(resource, 0), token)
    return token


def restore(copy: Path, into: Server, keys: Path, *extra: str | Path) -> tuple[int, str]:
    done = tenure("restore", copy, "--data", into.data, "--keys", keys, *extra)
    return done.returncode, done.stderr


def test_after_a_restore_every_grant_is_above_every_token_handed_out(
    fresh_server: Server, tmp_path: Path
) -> None:
    server, issued = fresh_server.start(), {}
    old = [rid("old") for _ in range(3)]
    with server.client() as client:
        for name in old:
            take(client, name, issued)
    load = Load(server, threads=3)  # the copy is taken while grants go on
    try:
        load.wait_for(30)
        copied = backup(server, tmp_path / "copy")
    finally:
        load.stop()
    assert copied.returncode == 0, copied.stderr
    new = [rid("new") for _ in range(2)]
    with server.client() as client:  # granted after the backup: the restore forgets them
        for name in old * 3 + new * 2:
            take(client, name, issued)
        lost_size = ledger_size(client)
    assert [issued[name] for name in old + new] == [4, 4, 4, 2, 2]
    server.stop()
    restored = Server(tmp_path / "restored")
    keys = restored.root / "keys"
    shutil.copytree(server.root / "keys", keys)
    code, said = restore(tmp_path / "copy", restored, keys, "--log-size", str(lost_size))
    assert code == 0, said
    assert "fencing floor" in said
    restored.start()
    try:
        with restored.client() as client:
            again = {name: take(client, name, {}) for name in old + new}
    finally:
        restored.stop()
    assert all(again[name] > max(issued.values()) for name in old + new), (again, issued)
    did = load_signing_keys(keys)[-1].did
    audited_leaves(restored.data, keys, did, tmp_path)  # `tenure audit` exits 0: no violation


def test_a_restore_needs_the_lost_logs_size_at_least_the_copys(
    fresh_server: Server, tmp_path: Path
) -> None:
    server = fresh_server.start()
    with server.client() as client:
        take(client, rid("one"), {})
        size = ledger_size(client)
    assert backup(server, tmp_path / "copy").returncode == 0
    server.stop()
    into, keys = Server(tmp_path / "into"), server.root / "keys"
    code, said = restore(tmp_path / "copy", into, keys)
    assert code == 2 and "--log-size" in said and "checkpoint" in said, said
    code, said = restore(tmp_path / "copy", into, keys, "--log-size", str(size - 1))
    assert code == 2 and f"below the {size} entries" in said, said
    assert not into.data.exists() and not list(into.root.glob(".data.partial-*"))
    code, said = restore(tmp_path / "copy", into, keys, "--log-size", str(size))
    assert code == 0, said  # a copy of a ledger that served nothing after it: its own size


def test_fence_floor_raises_a_stopped_folders_floor_and_keeps_it(
    fresh_server: Server, tmp_path: Path
) -> None:
    server, name, held = fresh_server.start(), rid("floor"), rid("held")
    with server.client() as client:
        token = take(client, name, {})
        assert acquire(client, held)["fencingToken"] == token  # live across the floor
        size = ledger_size(client)
    data, keys = server.data, server.root / "keys"
    busy = tenure("fence-floor", "--data", data, "--keys", keys, "--log-size", str(size + 5))
    assert busy.returncode == 2 and "a running server serves" in busy.stderr
    server.stop()
    raised = tenure("fence-floor", "--data", data, "--keys", keys, "--log-size", str(size + 5))
    assert raised.returncode == 0 and f"fencing floor {token + 5}" in raised.stderr
    kept = tenure("fence-floor", "--data", data, "--keys", keys, "--log-size", str(size))
    assert kept.returncode == 0 and f"fencing floor {token + 5}" in kept.stderr  # nothing lost
    server.start()
    revoked = tenure(
        "lease", "revoke", held, "--reason", "restored", "--data", data, "--keys", keys
    )
    assert revoked.returncode == 0 and f"fencing token {token + 6} or more" in revoked.stderr
    with server.client() as client:
        assert take(client, held, {}) == token + 6
        assert take(client, name, {}) == token + 6
        assert take(client, rid("fresh"), {}) == token + 6  # a resource the ledger never saw


def test_rule_2_grants_above_the_floor_and_above_a_higher_max_token() -> None:
    def grant(res: Resource, floor: int) -> int:
        args = AcquireArgs("h", 10_000, 86_400_000, b"o" * 32, token_floor=floor)
        decision = leases.acquire(res, args, NOW_MS)
        assert decision.outcome is Outcome.GRANTED and decision.lease is not None
        leases.release(res, b"o" * 32, None, NOW_MS)
        return decision.lease.fencing_token

    fresh, known = Resource("t", "new"), Resource("t", "old", max_token=9)
    assert grant(fresh, 5) == 6 and grant(fresh, 5) == 7  # the floor once, then rule 2
    assert grant(known, 5) == 10  # a max_token above the floor wins
    assert grant(Resource("t", "none"), 0) == 1


def test_fence_floor_on_a_postgresql_ledger(tmp_path: Path, postgres_url: str) -> None:
    server, name = Server(tmp_path, ["--database", postgres_url]).start(), rid("pg")
    try:
        with server.client() as client:
            token = take(client, name, {})
            size = ledger_size(client)
    finally:
        server.stop()
    keys = server.root / "keys"
    raised = tenure(
        "fence-floor", "--database", postgres_url, "--keys", keys, "--log-size", str(size + 3)
    )
    assert raised.returncode == 0 and f"fencing floor {token + 3}" in raised.stderr
    server.start()
    try:
        with server.client() as client:
            assert take(client, name, {}) == token + 4
            assert take(client, rid("pg-new"), {}) == token + 4
    finally:
        server.stop()
