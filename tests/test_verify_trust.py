"""Trust on the verifier side: retired keys, explicit trust, CLIs that never
trace back, and what the signature covers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.test_bundle import events, fetch_bundle
from tests.test_verify_bounds import SIGNER, receipt
from verify.bundle import verify_document
from verify.cli import main
from verify.trust import Period, parse_time

RETIRED = {
    "did": SIGNER.did,
    "validFrom": "2025-01-01T00:00:00.000Z",
    "validUntil": "2025-06-01T00:00:00.000Z",  # receipt() is dated 2026-01-01
}


def save(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document))
    return str(path)


def verify_cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "verify", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def save_nested(path: Path, template: Any, depth: int) -> str:
    """Save ``template`` with its "DEEP" string replaced by arrays nested ``depth`` deep (as
    text: Python's own encoder cannot write such a value)."""
    deep = "[" * depth + "0" + "]" * depth
    path.write_text(json.dumps(template).replace('"DEEP"', deep))
    return str(path)


def test_a_receipt_dated_after_its_keys_retirement_fails(tmp_path: Path) -> None:
    saved = save(tmp_path / "receipt.json", receipt())
    keyring = save(tmp_path / "keyring.json", {"keys": [RETIRED]})
    done = verify_cli(saved, "--keys", keyring)
    assert done.returncode == 1, done.stdout
    assert "✗ issuer" in done.stdout and "retired" in done.stdout
    current = save(tmp_path / "current.json", {"keys": [RETIRED | {"validUntil": None}]})
    assert verify_cli(saved, "--keys", current).returncode == 0
    early = save(tmp_path / "early.json", {"keys": [RETIRED | {"validFrom": "2027-01-01T00:00Z"}]})
    assert verify_cli(saved, "--keys", early).returncode == 1


def test_a_bundle_after_its_keys_retirement_fails_whatever_validity_it_lists(
    api: httpx.Client,
) -> None:
    bundle = fetch_bundle(api, events(api, 2) - 1)
    did = bundle["keys"][0]["did"]
    for key in bundle["keys"]:  # the dates a bundle lists are unsigned: a forger sets them freely
        key.update(validFrom="2000-01-01T00:00:00.000Z", validUntil=None)
    retired = Period(
        parse_time("2000-01-01T00:00:00Z", "t"), parse_time("2001-01-01T00:00:00Z", "t")
    )
    report = verify_document(bundle, {did: retired})
    assert [c.name for c in report.checks if not c.ok] == ["issuer"]
    assert verify_document(bundle, {did: Period()}).ok


def test_bad_keyring_dates_are_usage_errors(tmp_path: Path) -> None:
    saved = save(tmp_path / "receipt.json", receipt())
    keyring = save(tmp_path / "keyring.json", {"keys": [RETIRED | {"validUntil": "soon"}]})
    assert main([saved, "--keys", keyring]) == 2


@pytest.mark.parametrize("depth", [40, 1000, 100_000])
def test_deeply_nested_files_and_keyrings_exit_2_without_a_traceback(
    depth: int, tmp_path: Path
) -> None:
    deep = save_nested(tmp_path / "deep.json", {"data": "DEEP", "_provenance": {}}, depth)
    done = verify_cli(deep)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "ERROR" in done.stdout and "nest" in done.stdout
    keyring = save_nested(tmp_path / "keyring.json", {"keys": [{"did": "DEEP"}]}, depth)
    good = save(tmp_path / "receipt.json", receipt())
    done = verify_cli(good, "--keys", keyring)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_deeply_nested_bundle_exits_2(tmp_path: Path) -> None:
    bundle = {"type": "tenure-receipt-bundle/v1", "receipt": "DEEP"}
    done = verify_cli(save_nested(tmp_path / "bundle.json", bundle, 5000))
    assert done.returncode == 2 and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", [2**63, 2**64, 10**30, -(2**63) - 1])
def test_huge_log_index_is_refused_cleanly(value: int, tmp_path: Path) -> None:
    """An integer beyond I-JSON's is no tenure document: refused as unreadable (exit 2) with
    the rule it breaks, never a pass and never a traceback."""
    forged = receipt()
    forged["data"]["ledger"]["logIndex"] = value
    forged["_provenance"]["credentialSubject"]["ledger"]["logIndex"] = value
    done = verify_cli(save(tmp_path / "huge.json", forged), "--trust", SIGNER.did)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "RFC 7493" in done.stdout + done.stderr
    bundle = {"type": "tenure-receipt-bundle/v1", "receipt": forged, "entry": "", "keys": []}
    bundle |= {"inclusion": {"index": value, "treeSize": value, "hashes": []}}
    done = verify_cli(save(tmp_path / "huge-bundle.json", bundle), "--trust", SIGNER.did)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_the_report_names_what_the_signature_does_not_cover(tmp_path: Path) -> None:
    saved = receipt()
    saved["data"]["namespace"] = "ns_whatever"
    saved["note"] = "approved by the CFO"
    path = save(tmp_path / "extras.json", saved)
    done = verify_cli(path, "--trust", SIGNER.did)
    assert done.returncode == 0, done.stdout  # extras are not a failure, but they are named
    assert "NOT signed" in done.stdout
    for part in ("note", "data.ownerToken", "data.namespace"):
        assert part in done.stdout
    as_json = json.loads(verify_cli(path, "--trust", SIGNER.did, "--json").stdout)
    assert as_json["coverage"]["unsigned"] == ["note", "data.namespace", "data.ownerToken"]
    assert "data (through tenure.data)" in as_json["coverage"]["signed"]
