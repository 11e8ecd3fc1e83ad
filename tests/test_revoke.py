"""Operator force-release (docs/decisions/0011): `tenure lease revoke` against a live
server on a real SQLite ledger, the pure machine's `revoke`, and the audit over revoke entries."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.backends import open_storage
from ledger.lease import leases
from ledger.lease.leases import AcquireArgs, EventKind, Outcome, Resource, Revocation
from tests.conftest import ROOT, Server, lease, ledger_size, rid
from tests.test_audit import OWNER_B, Ledger, assert_reported, read, trusted
from tests.test_monitor_rules import follow, state_of
from verify.audit import audit, check_audit
from verify.bundle import verify_bundle
from verify.multikey import did_key

WHY = Revocation("alice", "stuck job, ticket OPS-1")


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def revoke(server: Server, resource: str, *more: str) -> subprocess.CompletedProcess[str]:
    folders = ["--data", str(server.data), "--keys", str(server.root / "keys")]
    return tenure("lease", "revoke", resource, *folders, *more)


def acquire(api: httpx.Client, resource: str, holder: str, **body: Any) -> dict[str, Any]:
    answer = lease(api, "acquire", resource=resource, holder=holder, **body)
    assert answer.status_code == 201, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


# -- the pure machine ---------------------------------------------------------------------


def grant(res: Resource, holder: str, now: int, capacity: int = 1) -> leases.Lease:
    args = AcquireArgs(holder, 10_000, 86_400_000, holder.encode() * 4, capacity=capacity)
    decision = leases.acquire(res, args, now)
    assert decision.lease is not None and decision.outcome is Outcome.GRANTED
    return decision.lease


def test_revoke_ends_every_live_lease_and_the_next_grant_is_fenced_above() -> None:
    res = Resource("t", "r")
    grant(res, "a", 0, capacity=2)
    grant(res, "b", 1, capacity=2)
    decision = leases.revoke(res, WHY, 5)
    assert decision.outcome is Outcome.RELEASED and not res.leases
    assert [(e.kind, e.lease.fencing_token) for e in decision.events] == [
        (EventKind.REVOKE, 1),
        (EventKind.REVOKE, 2),
    ]
    assert all(e.revocation == WHY and e.expires_at == e.lease.expires_at for e in decision.events)
    assert grant(res, "c", 6).fencing_token == 3


def test_revoke_of_one_holder_leaves_the_others() -> None:
    res = Resource("t", "r")
    grant(res, "a", 0, capacity=3)
    grant(res, "b", 0, capacity=3)
    by_token = leases.revoke(res, WHY, 1, fencing_token=1)
    assert [e.lease.holder for e in by_token.events] == ["a"]
    assert leases.revoke(res, WHY, 1, holder="a").outcome is Outcome.NOT_ACTIVE
    assert [lease.holder for lease in res.leases] == ["b"]


def test_revoke_of_an_expired_lease_is_not_active_after_recording_the_expiry() -> None:
    res = Resource("t", "r")
    grant(res, "a", 0)
    decision = leases.revoke(res, WHY, 10_000)
    assert decision.outcome is Outcome.NOT_ACTIVE
    assert [e.kind for e in decision.events] == [EventKind.EXPIRE]


# -- the audit ----------------------------------------------------------------------------

REVOKED = {"v": 2, "revokedBy": "0" * 64, "reason": "stuck job"}


def revoked_then_granted(token: int | None = 2, at_second: int = 3, **over: Any) -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10)
    ledger.add("revoke", 1, at_second, 10, lease_id=0, **(REVOKED | over))
    return ledger if token is None else ledger.add("acquire", token, 4, 14)


def test_a_valid_revoke_audits_clean(tmp_path: Path) -> None:
    records = revoked_then_granted().records()
    report = check_audit(records, trusted_keys=[trusted(records)])
    assert report.ok and not report.warnings


@pytest.mark.parametrize(
    ("over", "index", "check"),
    [
        ({"fencingToken": 2}, 1, "not-live"),  # a revoke of a lease never granted
        ({"ownerTokenDigest": OWNER_B}, 1, "owner"),  # not the lease granted
        ({"at_second": 11}, 1, "after-expiry"),  # a lease already over
        ({"v": 1}, 1, "entry-format"),  # revokedBy and reason are v2 fields (0001, 0011)
        ({"reason": "line\nbreak"}, 1, "entry-format"),
        ({"reason": ""}, 1, "entry-format"),
        ({"revokedBy": "alice"}, 1, "entry-format"),  # a name in clear, not a pseudonym
    ],
)
def test_a_forged_revoke_is_flagged_at_its_entry(
    over: dict[str, Any], index: int, check: str, tmp_path: Path
) -> None:
    assert_reported(revoked_then_granted(None, **over).records(), tmp_path, index, check)


def test_a_grant_after_a_revoke_that_reuses_the_token_is_flagged(tmp_path: Path) -> None:
    assert_reported(revoked_then_granted(token=1).records(), tmp_path, 2, "fencing")


def test_a_revoke_of_a_released_lease_is_flagged(tmp_path: Path) -> None:
    ledger = Ledger().add("acquire", 1, 0, 10).add("release", 1, 1, 10, lease_id=0)
    ledger.add("revoke", 1, 2, 10, lease_id=0, **REVOKED)
    assert_reported(ledger.records(), tmp_path, 2, "not-live")


# -- the CLI against a live server ----------------------------------------------------------


def queued(server: Server) -> int:
    storage = open_storage(server.data)
    try:
        return storage.queued_waiters()
    finally:
        storage.close()


def queued_in(location: str) -> int:
    storage = open_storage(location)
    try:
        return storage.queued_waiters()
    finally:
        storage.close()


def wait_for_waiter(server: Server) -> None:
    deadline = time.monotonic() + 10
    while queued(server) < 1:  # the waiter's row is in the shared ledger's waiters table
        assert time.monotonic() < deadline, "the waiter never queued"
        time.sleep(0.02)


def test_revoke_fences_a_live_servers_holder_serves_its_waiter_and_audits(
    fresh_server: Server, tmp_path: Path
) -> None:
    server = fresh_server.start()
    r, plain = rid(), rid()
    with server.client() as api, server.client() as other:
        old = acquire(api, r, "w1", ttlSeconds=300)
        alone = acquire(api, plain, "w1", ttlSeconds=300)
        waited: list[httpx.Response] = []
        body = {"resource": r, "holder": "w2", "waitSeconds": 30}
        thread = threading.Thread(
            target=lambda: waited.append(other.post("/api/v1/lease/acquire", json=body))
        )
        thread.start()
        wait_for_waiter(server)
        done = revoke(server, r, "--reason", "stuck job OPS-1", "--by", "alice", "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert [(x["holder"], x["fencingToken"]) for x in report["revoked"]] == [("w1", 1)]
        thread.join(timeout=5)  # woken at once, not at its 30 s deadline
        assert not thread.is_alive() and waited[0].status_code == 201, waited
        assert waited[0].json()["data"]["fencingToken"] == 2  # served first, fenced above
        token = {"resource": r, "ownerToken": old["ownerToken"]}
        renewed = lease(api, "renew", **token)
        assert renewed.status_code == 409 and renewed.json()["data"]["outcome"] == "LOST"
        released = lease(api, "release", **token)
        assert released.json()["data"]["outcome"] == "NOT_ACTIVE"
        assert revoke(server, plain, "--reason", "drained").returncode == 0
        assert acquire(api, plain, "w3")["fencingToken"] == alone["fencingToken"] + 1
        size = ledger_size(api)
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
        index = report["revoked"][0]["ledgerIndex"]
        bundle = api.get(f"/api/v1/log/bundle/{index}").json()  # proven like any entry
        assert verify_bundle(bundle, dids).ok
        assert json.loads(base64.b64decode(bundle["entry"]))["kind"] == "revoke"
    server.stop()
    out = tmp_path / "ledger.jsonl"
    folders = ["--data", str(server.data), "--keys", str(server.root / "keys")]
    assert tenure("export", *folders, "--out", str(out)).returncode == 0
    records = read(out)
    entries = [json.loads(base64.b64decode(x["leaf"])) for x in records if "leaf" in x]
    assert len(entries) == size
    revokes = [e for e in entries if e["kind"] == "revoke"]
    assert [(e["v"], e["reason"]) for e in revokes] == [(2, "stuck job OPS-1"), (2, "drained")]
    assert revokes[0]["revokedBy"] == report["revokedBy"] and "alice" not in out.read_text()
    assert audit(records, trusted_keys=dids).ok
    audited = tenure("audit", str(out), *(arg for did in dids for arg in ("--trust", did)))
    assert audited.returncode == 0, audited.stdout


def test_revoke_of_one_semaphore_holder_and_of_each_kind_of_tenant(server: Server) -> None:
    sem = rid()
    with server.client() as api:
        holders = [acquire(api, sem, f"h{i}", capacity=2) for i in range(2)]
        assert revoke(server, sem, "--reason", "r", "--holder", "h0").returncode == 0
        lost = lease(api, "renew", resource=sem, ownerToken=holders[0]["ownerToken"])
        assert lost.json()["data"]["outcome"] == "LOST"
        kept = lease(api, "renew", resource=sem, ownerToken=holders[1]["ownerToken"])
        assert kept.json()["data"]["outcome"] == "RENEWED"
        namespace = api.post("/api/v1/namespaces", json={}).json()["data"]["namespace"]
        acquire(api, "deploy:prod", "w", namespace=namespace)
        digest = hashlib.sha256(namespace.encode()).hexdigest()[:32]
        assert revoke(server, "deploy:prod", "--reason", "r").returncode == 2  # not anonymous
        by_ns = revoke(server, "deploy:prod", "--reason", "r", "--namespace-digest", digest)
        assert by_ns.returncode == 0, by_ns.stderr
        key = tenure("apikey", "create", "team-a", "--data", str(server.data)).stdout.strip()
        keyed = server.client(Authorization=f"Bearer {key}")
        with keyed:
            acquire(keyed, "deploy:prod", "w")
            by_key = revoke(server, "deploy:prod", "--reason", "r", "--api-key-name", "team-a")
            assert by_key.returncode == 0, by_key.stderr
            assert acquire(keyed, "deploy:prod", "w")["fencingToken"] == 2
            acquire(keyed, "deploy:prod", "w", tenantId="eu")
            sub = ["--api-key-name", "team-a", "--tenant-id", "eu"]
            assert revoke(server, "deploy:prod", "--reason", "r", *sub).returncode == 0
            assert acquire(keyed, "deploy:prod", "w", tenantId="eu")["fencingToken"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reason", "x"], "no lease was ever granted on"),
        (["--reason", "x", "--holder", "nobody"], "no live matching lease"),
        (["--reason", "tab\there"], "--reason: reason must be 1..200 printable characters"),
        (["--reason", "x" * 201], "--reason: reason must be 1..200 printable characters"),
        (["--reason", "x", "--by", ""], "--by must be 1..128 printable characters"),
        (["--reason", "x", "--namespace-digest", "zz"], "--namespace-digest must be 32 hex"),
        (["--reason", "x", "--fencing-token", "0"], "--fencing-token must be a positive"),
    ],
)
def test_bad_input_exits_2_naming_the_rule_and_writes_nothing(
    server: Server, args: list[str], message: str
) -> None:
    held = rid()
    with server.client() as api:
        acquire(api, held, "w")
        size = ledger_size(api)
        resource = rid() if "no lease was ever" in message else held
        run = revoke(server, resource, *args)
        assert run.returncode == 2 and message in run.stderr, run.stderr
        assert ledger_size(api) == size


def test_a_lease_no_longer_held_is_refused(server: Server) -> None:
    r = rid()
    with server.client() as api:
        granted = acquire(api, r, "w")
        lease(api, "release", resource=r, ownerToken=granted["ownerToken"])
        size = ledger_size(api)
        run = revoke(server, r, "--reason", "x")
        assert run.returncode == 2 and "no live lease" in run.stderr and "not held" in run.stderr
        assert ledger_size(api) == size


def test_a_folder_without_a_ledger_is_refused(tmp_path: Path) -> None:
    run = tenure("lease", "revoke", "r", "--reason", "x", "--data", str(tmp_path / "none"))
    assert run.returncode == 2 and "no ledger in" in run.stderr


def test_the_monitor_checks_revokes_as_the_audit_does() -> None:
    for ledger in (revoked_then_granted(), revoked_then_granted(token=1)):
        state = state_of(ledger)
        found = follow(state, ledger, len(ledger.entries))
        expected = audit(ledger.records(), [did_key(ledger.key.public_key())]).violations
        assert [(f.index, f.check) for f in found] == [(v.index, v.check) for v in expected]
    assert [(f.index, f.check) for f in found] == [(2, "fencing")]


def test_revoke_on_postgresql_fences_the_live_servers_holder(
    fresh_server: Server, postgres_url: str
) -> None:
    fresh_server.args = ["--database", postgres_url]
    server = fresh_server.start()
    r = rid()
    where = ["--database", postgres_url, "--keys", str(server.root / "keys")]
    with server.client() as api, server.client() as other:
        old = acquire(api, r, "w1", ttlSeconds=300)
        missing = tenure("lease", "revoke", rid(), "--reason", "x", *where)
        assert missing.returncode == 2 and "no lease was ever granted" in missing.stderr
        waited: list[httpx.Response] = []
        body = {"resource": r, "holder": "w3", "waitSeconds": 30}
        thread = threading.Thread(
            target=lambda: waited.append(other.post("/api/v1/lease/acquire", json=body))
        )
        thread.start()
        deadline = time.monotonic() + 10
        while queued_in(postgres_url) < 1:
            assert time.monotonic() < deadline, "the waiter never queued"
            time.sleep(0.02)
        done = tenure("lease", "revoke", r, "--reason", "stuck", *where)
        assert done.returncode == 0, done.stderr
        thread.join(timeout=5)  # woken by the CLI's NOTIFY, not at its 30 s deadline
        assert not thread.is_alive() and waited[0].json()["data"]["fencingToken"] == 2, waited
        renewed = lease(api, "renew", resource=r, ownerToken=old["ownerToken"])
        assert renewed.json()["data"]["outcome"] == "LOST"
        assert lease(api, "release", resource=r, ownerToken=waited[0].json()["data"]["ownerToken"])
        assert acquire(api, r, "w2")["fencingToken"] == 3
