"""`tenure export` and `tenure audit` (DESIGN §6): a real server's ledger audits clean, and each
hand-made violation — re-signed with a test key, so only the invariant fails — is reported at
the right entry index with exit code 1."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.log.checkpoint import checkpoint_body, sign_note
from ledger.log.merkle import CompactRange
from tests.conftest import ROOT, Server, lease, rid
from verify.audit import audit, check_audit, parse_lines
from verify.audit_report import AuditFailed
from verify.errors import MalformedInput
from verify.jcs import canonicalize
from verify.multikey import did_key, public_key_multibase
from verify.rfc9162 import leaf_hash

ORIGIN = "audit.test/log"
OWNER_A, OWNER_B = "a" * 64, "b" * 64
T0 = "2030-01-01T00:00:00.000Z"
LIFECYCLE_END = "2030-01-02T00:00:00.000Z"


def at(seconds: int) -> str:
    """ISO time ``seconds`` after T0 (under a minute, so one fixed-width format)."""
    return f"2030-01-01T00:00:{seconds:02d}.000Z"


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def read(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as lines:
        return list(parse_lines(lines))


# -- a real server's ledger ----------------------------------------------------------------


def acquire(api: httpx.Client, resource: str, holder: str, **body: Any) -> dict[str, Any]:
    answer = lease(api, "acquire", resource=resource, holder=holder, **body)
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["data"])


def exercise(api: httpx.Client) -> None:
    """Acquires, renews, releases, a completion, an expiry, a scope release, a semaphore."""
    r = rid()
    granted = acquire(api, r, "w1", ttlSeconds=30)
    assert lease(api, "renew", resource=r, ownerToken=granted["ownerToken"]).status_code == 200
    assert lease(api, "release", resource=r, ownerToken=granted["ownerToken"]).status_code == 200
    again = acquire(api, r, "w2")
    assert again["fencingToken"] == 2
    done = lease(api, "complete", resource=r, ownerToken=again["ownerToken"], result={"ok": 1})
    assert done.json()["data"]["outcome"] == "COMPLETED"
    assert api.get("/api/v1/log/checkpoint").status_code == 200  # a checkpoint mid-ledger
    short = rid()
    acquire(api, short, "w1", ttlSeconds=1)
    scope = rid("scope")
    acquire(api, rid(), "w1", scope=scope, ttlSeconds=60)
    assert len(api.post(f"/api/v1/scopes/{scope}/release", json={}).json()["data"]["releasedIds"])
    sem = rid()
    holders = [acquire(api, sem, f"h{i}", capacity=3) for i in range(3)]
    assert lease(api, "acquire", resource=sem, holder="h3", capacity=3).status_code == 409
    lease(api, "release", resource=sem, ownerToken=holders[0]["ownerToken"])
    assert acquire(api, sem, "h3", capacity=3)["fencingToken"] == 4
    time.sleep(1.6)  # the sweeper records the expiry of `short`
    assert acquire(api, short, "w2")["fencingToken"] == 2


def test_a_real_ledger_exports_and_audits_clean(fresh_server: Server, tmp_path: Path) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        exercise(api)
        final = api.get("/api/v1/log/checkpoint").json()
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    fresh_server.stop()
    out = tmp_path / "ledger.jsonl"
    exported = tenure("export", "--data", str(fresh_server.data), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    records = read(out)
    kinds = [json.loads(base64.b64decode(r["leaf"]))["kind"] for r in records if "leaf" in r]
    assert {"acquire", "renew", "release", "complete", "expire", "scope_release"} <= set(kinds)
    assert records[0]["treeSize"] == final["treeSize"] == len(kinds)
    audited = tenure("audit", str(out), *(arg for did in dids for arg in ("--trust", did)))
    assert audited.returncode == 0, audited.stdout + audited.stderr
    report = audit(records, trusted_keys=dids)
    assert report.ok and not report.warnings
    assert report.checkpoints_verified == report.checkpoints == 2
    assert report.signers[final["treeSize"]] in dids


def test_audit_path_needs_only_the_base_install(tmp_path: Path) -> None:
    path = clean().write(tmp_path / "clean.jsonl")
    code = (
        "import sys; from api.cli import main; rc = main(['audit', sys.argv[1], '--trust',"
        " sys.argv[2]]);"
        " assert not {'fastapi', 'sqlite3', 'sqlite_utils'} & set(sys.modules), 'imported';"
        " sys.exit(rc)"
    )
    args = [sys.executable, "-c", code, str(path), trusted(read(path))]
    run = subprocess.run(args, cwd=ROOT, capture_output=True)
    assert run.returncode == 0, run.stderr


# -- hand-made exports, signed with a test key ---------------------------------------------


@dataclass
class Ledger:
    """Entries crafted by hand, checkpointed and signed with a fresh Ed25519 key."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)

    def add(self, kind: str, token: int, time: int, expires: int, **over: Any) -> Ledger:
        index = over.pop("index", len(self.entries))
        entry = {
            "v": 1,
            "index": index,
            "time": at(time),
            "kind": kind,
            "tenant": "t" * 64,
            "resource": over.pop("resource", "r" * 64),
            "holder": over.pop("holder", f"{token:064x}"),
            "fencingToken": token,
            "expiresAt": at(expires),
            "absoluteExpiresAt": LIFECYCLE_END,
            "capacity": 1,
            "ownerTokenDigest": OWNER_A,
            "leaseId": index if kind == "acquire" else over.pop("lease_id", 0),
        }
        self.entries.append(entry | over)
        return self

    def leaves(self) -> list[bytes]:
        return [canonicalize(entry) for entry in self.entries]

    def checkpoint(self, leaves: list[bytes], size: int) -> dict[str, Any]:
        tree = CompactRange.empty()
        for leaf in leaves[:size]:
            tree.append(leaf_hash(leaf))
        note = sign_note(checkpoint_body(ORIGIN, size, tree.root()), ORIGIN, self.key)
        root = base64.b64encode(tree.root()).decode()
        record = {"type": "checkpoint", "treeSize": size, "rootHash": root, "timestamp": at(59)}
        return record | {"note": note}

    def records(self, sizes: tuple[int, ...] = ()) -> list[dict[str, Any]]:
        leaves = self.leaves()
        checkpoints = {size: self.checkpoint(leaves, size) for size in sizes or (len(leaves),)}
        public = self.key.public_key()
        out: list[dict[str, Any]] = [
            {"type": "tenure-ledger-export", "version": 1, "origin": ORIGIN, "treeSize": 0},
            {
                "type": "key",
                "did": did_key(public),
                "publicKeyMultibase": public_key_multibase(public),
                "validFrom": T0,
                "validUntil": None,
            },
        ]
        for position, (entry, leaf) in enumerate(zip(self.entries, leaves, strict=True), 1):
            out.append({"type": "entry", "index": entry["index"], "leaf": _b64(leaf)})
            if position in checkpoints:
                out.append(checkpoints[position])
        out[0]["treeSize"] = len(leaves)
        return out

    def write(self, path: Path, records: list[dict[str, Any]] | None = None) -> Path:
        lines = (json.dumps(r) + "\n" for r in records or self.records())
        path.write_text("".join(lines))
        return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def trusted(records: list[dict[str, Any]]) -> str:
    """The did of the key a hand-made export lists: the key the test signed with."""
    return str(next(r["did"] for r in records if r["type"] == "key"))


def clean() -> Ledger:
    """Two lifecycles' worth of honest events on one resource, then a semaphore."""
    ledger = Ledger().add("acquire", 1, 0, 10).add("renew", 1, 5, 20, lease_id=0)
    ledger.add("release", 1, 6, 20, lease_id=0).add("acquire", 2, 7, 9)
    ledger.add("expire", 2, 9, 9, lease_id=3)
    sem = {"resource": "s" * 64, "capacity": 2}
    ledger.add("acquire", 1, 10, 30, **sem).add("acquire", 2, 11, 30, **sem)
    return ledger.add("complete", 2, 12, 30, lease_id=6, resultDigest="c" * 64, **sem)


def test_a_clean_hand_made_ledger_passes(tmp_path: Path) -> None:
    ledger = clean()
    records = ledger.records(sizes=(3, 8))
    report = check_audit(records, trusted_keys=[trusted(records)])
    assert report.checkpoints_verified == 2 and not report.warnings
    path = str(ledger.write(tmp_path / "ok.jsonl"))
    run = tenure("audit", path, "--json", "--trust", trusted(records))
    assert run.returncode == 0, run.stdout
    assert json.loads(run.stdout)["ok"] is True


def repeated_token() -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10).add("release", 1, 1, 10, lease_id=0)
    return ledger.add("acquire", 1, 2, 12)


def over_capacity() -> Ledger:
    return Ledger().add("acquire", 1, 0, 10).add("acquire", 2, 1, 10)


def foreign_owner() -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10)
    return ledger.add("release", 1, 1, 10, lease_id=0, ownerTokenDigest=OWNER_B)


def renew_after_expiry() -> Ledger:
    return Ledger().add("acquire", 1, 0, 5).add("renew", 1, 6, 20, lease_id=0)


def past_lifecycle() -> Ledger:
    end = {"absoluteExpiresAt": at(10)}
    return Ledger().add("acquire", 1, 0, 5, **end).add("renew", 1, 1, 20, lease_id=0, **end)


def index_gap() -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10).add("release", 1, 1, 10, lease_id=0)
    return ledger.add("acquire", 2, 2, 12, index=3)


def release_twice() -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10).add("release", 1, 1, 10, lease_id=0)
    return ledger.add("release", 1, 2, 10, lease_id=0)


def grant_after_completion() -> Ledger:
    ledger = Ledger().add("acquire", 1, 0, 10).add("complete", 1, 1, 10, lease_id=0)
    return ledger.add("acquire", 2, 2, 12)


def early_expiry() -> Ledger:
    return Ledger().add("acquire", 1, 0, 10).add("expire", 1, 5, 10, lease_id=0)


@pytest.mark.parametrize(
    ("make", "index", "check"),
    [
        (release_twice, 2, "not-live"),
        (grant_after_completion, 2, "completed"),
        (early_expiry, 1, "early-expire"),
        (repeated_token, 2, "fencing"),
        (over_capacity, 1, "capacity"),
        (foreign_owner, 1, "owner"),
        (renew_after_expiry, 1, "after-expiry"),
        (past_lifecycle, 1, "lifecycle"),
        (index_gap, 3, "index-gap"),
    ],
)
def test_each_broken_invariant_is_reported_at_its_entry(
    make: Any, index: int, check: str, tmp_path: Path
) -> None:
    assert_reported(make().records(), tmp_path, index, check)


def test_a_tampered_entry_byte_breaks_the_root_of_its_checkpoint(tmp_path: Path) -> None:
    ledger = Ledger().add("acquire", 1, 0, 10).add("release", 1, 1, 10, lease_id=0)
    ledger.add("acquire", 2, 2, 12).add("release", 2, 3, 12, lease_id=2)
    records = ledger.records(sizes=(2, 4))
    entry = next(r for r in records if r.get("index") == 3 and r["type"] == "entry")
    leaf = base64.b64decode(entry["leaf"])
    entry["leaf"] = _b64(leaf.replace(b"00:00:03.000Z", b"00:00:04.000Z"))  # still canonical
    report = assert_reported(records, tmp_path, 3, "checkpoint-root")
    assert "[2, 4)" in report.violations[0].message
    assert report.checkpoints_verified == 1


def test_a_bad_checkpoint_signature_is_reported(tmp_path: Path) -> None:
    records = clean().records()
    checkpoint = records[-1]
    text, signature = checkpoint["note"].rstrip("\n").rsplit(" ", 1)
    raw = bytearray(base64.b64decode(signature))
    raw[10] ^= 1  # inside the Ed25519 signature, after the 4-byte key ID
    checkpoint["note"] = f"{text} {_b64(bytes(raw))}\n"
    assert_reported(records, tmp_path, 7, "checkpoint-signature")


def test_a_checkpoint_signed_by_an_untrusted_key_fails(tmp_path: Path) -> None:
    other = did_key(Ed25519PrivateKey.generate().public_key())
    path = clean().write(tmp_path / "ledger.jsonl")
    run = tenure("audit", str(path), "--trust", other)
    assert run.returncode == 1 and "entry 7: untrusted-key:" in run.stdout
    assert "0/1 checkpoints verified" in run.stdout
    with pytest.raises(AuditFailed) as failed:
        check_audit(read(path), trusted_keys=[other])
    assert [v.check for v in failed.value.report.violations] == ["untrusted-key", "uncovered"]


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"type": "tenure-ledger-export", "version": 1\n')
    assert tenure("audit", str(garbage)).returncode == 2
    assert tenure("audit", str(tmp_path / "missing.jsonl")).returncode == 2
    path = str(clean().write(tmp_path / "ok.jsonl"))
    assert tenure("audit", path, "--trust", "did:web:example.com").returncode == 2
    with pytest.raises(MalformedInput):
        audit([{"type": "entry", "index": 0, "leaf": ""}])


def assert_reported(records: list[dict[str, Any]], tmp_path: Path, index: int, check: str) -> Any:
    """One violation at ``index`` (and perhaps the entries it leaves unproven); the CLI says so
    and exits 1."""
    report = audit(records, trusted_keys=[trusted(records)])
    found = [(v.index, v.check) for v in report.violations if v.check != "uncovered"]
    assert found == [(index, check)], report.violations
    path = str(Ledger().write(tmp_path / "broken.jsonl", records))
    run = tenure("audit", path, "--trust", trusted(records))
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"entry {index}: {check}:" in run.stdout
    return report
