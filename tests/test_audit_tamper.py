"""`tenure audit --trust` proves every entry from a trusted signed checkpoint.

Each tampered export below passed (exit 0, "OK") before: uncovered entries were only a warning
and the header's unsigned treeSize was believed. Real Ed25519 signatures throughout.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Server, lease, rid
from tests.test_audit import Ledger, _b64, read, tenure, trusted
from verify.audit import audit


def long_ledger(count: int = 40) -> Ledger:
    """``count`` honest events: each lease acquired and released by its own holder."""
    ledger = Ledger()
    for pair in range(count // 2):
        token = pair + 1
        ledger.add("acquire", token, pair, pair + 1, resource=f"{pair:064x}")
        ledger.add("release", token, pair, pair + 1, lease_id=2 * pair, resource=f"{pair:064x}")
    return ledger


def rewrite_holder(records: list[dict[str, Any]], lease: int) -> None:
    """Rewrite lease ``lease``'s holder in every entry (still canonical, still consistent)."""
    for record in records:
        if record["type"] != "entry":
            continue
        entry = json.loads(base64.b64decode(record["leaf"]))
        if entry["leaseId"] == lease:
            entry["holder"] = "e" * 64
            leaf = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
            record["leaf"] = _b64(leaf)


def checks(records: list[dict[str, Any]], tmp_path: Path) -> set[str]:
    """The audit's violations, library and CLI agreeing that it fails (exit 1)."""
    did = trusted(records)
    report = audit(records, trusted_keys=[did])
    path = Ledger().write(tmp_path / "tampered.jsonl", records)
    run = tenure("audit", str(path), "--trust", did)
    assert run.returncode == 1, run.stdout + run.stderr
    assert not report.ok
    return {v.check for v in report.violations}


def test_honest_long_ledger_passes(tmp_path: Path) -> None:
    records = long_ledger().records(sizes=(10, 20, 30, 40))
    assert audit(records, trusted_keys=[trusted(records)]).ok


def test_a_every_checkpoint_dropped_and_a_holder_rewritten(tmp_path: Path) -> None:
    records = [
        r for r in long_ledger().records(sizes=(10, 20, 30, 40)) if r["type"] != "checkpoint"
    ]
    rewrite_holder(records, 4)
    assert "uncovered" in checks(records, tmp_path)


def test_b_checkpoints_after_entry_20_dropped_and_a_later_lease_rewritten(tmp_path: Path) -> None:
    records = long_ledger().records(sizes=(10, 20, 30, 40))
    records = [r for r in records if r["type"] != "checkpoint" or r["treeSize"] <= 20]
    rewrite_holder(records, 30)
    assert "uncovered" in checks(records, tmp_path)


def test_c_cut_after_30_a_made_up_grant_and_a_header_of_32(tmp_path: Path) -> None:
    honest = long_ledger().records(sizes=(10, 20, 31, 40))
    cut = next(
        i for i, r in enumerate(honest) if r.get("treeSize") == 31 and r["type"] == "checkpoint"
    )
    records = honest[: cut + 1]
    forged = Ledger().add("acquire", 99, 50, 51, index=31, resource="f" * 64).leaves()[0]
    records.append({"type": "entry", "index": 31, "leaf": _b64(forged)})
    records[0]["treeSize"] = 32
    assert "uncovered" in checks(records, tmp_path)


@pytest.mark.parametrize("origin", ["tenure.local/log/x", "anything at all"])
def test_d_a_header_only_export_fails(origin: str, tmp_path: Path) -> None:
    records = Ledger().records()[:2]  # header and key, no entry, no checkpoint
    records[0].update(origin=origin, treeSize=0)
    assert "uncovered" in checks(records, tmp_path)


def test_without_a_trusted_key_nothing_passes(tmp_path: Path) -> None:
    ledger = long_ledger()
    records = ledger.records(sizes=(40,))
    report = audit(records)
    assert not report.ok and [v.check for v in report.violations] == ["untrusted"]
    run = tenure("audit", str(ledger.write(tmp_path / "own-keys.jsonl")))
    assert run.returncode == 1 and "no trusted key" in run.stdout + run.stderr


def test_read_ahead_checkpoints_are_handled_in_linear_time() -> None:
    records = long_ledger(4).records(sizes=(4,))
    checkpoint = next(r for r in records if r["type"] == "checkpoint")
    ahead = [checkpoint | {"treeSize": 10**6 - n} for n in range(8000)]
    started = time.perf_counter()
    report = audit([*records[:2], *ahead, *records[2:]], trusted_keys=[trusted(records)])
    elapsed = time.perf_counter() - started
    assert sum(v.check == "checkpoint-size" for v in report.violations) == 8000
    assert elapsed < 1.0, elapsed


def test_export_signs_a_final_checkpoint_covering_everything(
    fresh_server: Server, tmp_path: Path
) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        for _ in range(3):
            assert lease(api, "acquire", resource=rid(), holder="h").status_code == 201
        dids = [key["did"] for key in api.get("/api/v1/keys").json()["keys"]]
    fresh_server.kill()  # no checkpoint at shutdown: the latest one is older than the tree
    out = tmp_path / "ledger.jsonl"
    run = tenure("export", "--data", str(fresh_server.data), "--out", str(out))
    assert run.returncode == 0 and "warning: no signing key" in run.stderr
    assert tenure("audit", str(out), "--trust", dids[0]).returncode == 1  # last entries unproven
    keys = str(fresh_server.root / "keys")
    run = tenure("export", "--data", str(fresh_server.data), "--out", str(out), "--keys", keys)
    assert run.returncode == 0, run.stderr
    records = read(out)
    assert records[-1]["type"] == "checkpoint" and records[-1]["treeSize"] == records[0]["treeSize"]
    audited = tenure("audit", str(out), "--trust", dids[0])
    assert audited.returncode == 0, audited.stdout + audited.stderr


@pytest.mark.parametrize("depth", [3, 1000, 100_000])
def test_a_deeply_nested_export_line_exits_2_without_a_traceback(
    depth: int, tmp_path: Path
) -> None:
    path = Ledger().add("acquire", 1, 0, 10).write(tmp_path / "deep.jsonl")
    did = trusted(read(path))
    deep = '{"type": "entry", "index": 1, "leaf": ' + "[" * depth + "]" * depth + "}\n"
    path.write_text(path.read_text() + deep)
    run = tenure("audit", str(path), "--trust", did)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr


def test_a_deeply_nested_leaf_is_a_violation(tmp_path: Path) -> None:
    records = Ledger().add("acquire", 1, 0, 10).records()
    leaf = b"[" * 100_000 + b"]" * 100_000
    records.insert(3, {"type": "entry", "index": 1, "leaf": _b64(leaf)})
    report = audit(records, trusted_keys=[trusted(records)])
    assert "entry-json" in {v.check for v in report.violations}
