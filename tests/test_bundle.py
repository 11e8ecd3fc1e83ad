"""Offline receipt bundles (DESIGN §6, docs/bundle-format.md) from a real server, checked by the
library call, by `verify-provenance` as a process, and by `POST /api/v1/verify-provenance`."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, lease, rid
from tests.interop_util import node_available, run_node_verifier
from verify.bundle import BUNDLE_TYPE, BundleError, check_bundle, verify_bundle
from verify.cli import main

RDFC = {"Accept-Provenance": "eddsa-rdfc-2022"}
OTHER_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
Bundle = dict[str, Any]


def acquire(api: httpx.Client) -> dict[str, Any]:
    """A fresh grant: the caller's own saved response."""
    response = lease(api, "acquire", resource=rid(), holder="w")
    assert response.status_code == 201
    answer: dict[str, Any] = response.json()
    return answer


def events(api: httpx.Client, count: int) -> int:
    """Append `count` grants; the index of the last one."""
    return int([acquire(api) for _ in range(count)][-1]["data"]["ledger"]["logIndex"])


def fetch_bundle(api: httpx.Client, index: int, headers: dict[str, str] | None = None) -> Bundle:
    response = api.get(f"/api/v1/log/bundle/{index}", headers=headers or {})
    assert response.status_code == 200, response.text
    bundle: Bundle = response.json()
    return bundle


def trusted(api: httpx.Client) -> set[str]:
    return {key["did"] for key in api.get("/api/v1/keys").json()["keys"]}


def own_keys(bundle: Bundle) -> set[str]:
    """The dids the bundle lists: the server's keys for a genuine (or tampered) one."""
    return {key["did"] for key in bundle["keys"]}


def failed(bundle: Bundle, keys: set[str] | None = None) -> list[str]:
    """The failed checks when trusting ``keys`` (by default the keys the bundle lists)."""
    trust = own_keys(bundle) if keys is None else keys
    return [check.name for check in verify_bundle(bundle, trust).checks if not check.ok]


def flip_b64(value: str, at: int = 0) -> str:
    raw = bytearray(base64.b64decode(value))
    raw[at] ^= 1
    return base64.b64encode(bytes(raw)).decode()


def flip_note_signature(note: str) -> str:
    """Flip one byte of the Ed25519 signature (after the 4-byte key ID) of the last line."""
    body, _, line = note[:-1].rpartition("\n")
    prefix, _, encoded = line.rpartition(" ")
    return f"{body}\n{prefix} {flip_b64(encoded, 10)}\n"


def verify_cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "verify", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def save(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document))
    return str(path)


@pytest.fixture(scope="module")
def sample(server: Server) -> Bundle:
    """A bundle whose entry has a non-trivial audit path (several entries around it)."""
    with server.client() as api:
        index = events(api, 7) - 3
        return fetch_bundle(api, index)


@pytest.mark.parametrize("headers", [None, RDFC], ids=["jcs", "rdfc"])
def test_genuine_bundle_passes_library_and_cli(
    api: httpx.Client, tmp_path: Path, headers: dict[str, str] | None
) -> None:
    bundle = fetch_bundle(api, events(api, 3) - 1, headers)
    assert bundle["type"] == BUNDLE_TYPE
    suite = bundle["receipt"]["_provenance"]["proof"]["cryptosuite"]
    assert suite == ("eddsa-rdfc-2022" if headers else "eddsa-jcs-2022")
    report = verify_bundle(bundle, trusted(api))
    assert report.ok, report.as_data()
    names = [check.name for check in report.checks]
    assert {"bundle:format", "keys", "proof", "issuer", "entry", "checkpoint", "inclusion"} <= set(
        names
    )
    check_bundle(bundle, trusted(api))
    saved = save(tmp_path / "bundle.json", bundle)
    done = verify_cli(saved, *(arg for did in trusted(api) for arg in ("--trust", did)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓ inclusion" in done.stdout


def test_without_a_trusted_key_a_genuine_bundle_does_not_pass(
    sample: Bundle, tmp_path: Path
) -> None:
    """A bundle forged with its own key passed without --trust (exit 0)."""
    untrusted = [c.name for c in verify_bundle(sample, None).checks if not c.ok]
    assert untrusted == ["keys", "issuer"]
    done = verify_cli(save(tmp_path / "bundle.json", sample))
    assert done.returncode == 1, done.stdout
    assert "no trusted key was given" in done.stdout and "hint:" in done.stdout


def test_every_flipped_entry_byte_fails_the_entry_check(sample: Bundle) -> None:
    size = len(base64.b64decode(sample["entry"]))
    for at in range(size):
        tampered = copy.deepcopy(sample)
        tampered["entry"] = flip_b64(sample["entry"], at)
        assert "entry" in failed(tampered), at


def test_every_flipped_inclusion_hash_fails_the_inclusion_check(sample: Bundle) -> None:
    hashes = sample["inclusion"]["hashes"]
    assert len(hashes) >= 2
    for which in range(len(hashes)):
        for at in (0, 31):
            tampered = copy.deepcopy(sample)
            tampered["inclusion"]["hashes"][which] = flip_b64(hashes[which], at)
            assert failed(tampered) == ["inclusion"], (which, at)


TAMPERS: dict[str, tuple[Callable[[Bundle], None], str]] = {
    "checkpoint-root": (
        lambda b: b["checkpoint"].update(rootHash=flip_b64(b["checkpoint"]["rootHash"])),
        "checkpoint",
    ),
    "note-signature": (
        lambda b: b["checkpoint"].update(note=flip_note_signature(b["checkpoint"]["note"])),
        "checkpoint",
    ),
    "note-size": (
        lambda b: b["checkpoint"].update(note=b["checkpoint"]["note"].replace("\n", "\n1", 1)),
        "checkpoint",
    ),
    "proof-value": (
        lambda b: b["receipt"]["_provenance"]["proof"].update(proofValue="z" + "1" * 87),
        "proof",
    ),
    "receipt-leaf": (
        lambda b: b["receipt"]["data"]["ledger"].update(
            leafHash=flip_b64(b["receipt"]["data"]["ledger"]["leafHash"])
        ),
        "entry",
    ),
    "inclusion-index": (
        lambda b: b["inclusion"].update(index=b["inclusion"]["index"] + 1),
        "entry",
    ),
    "unknown-version": (lambda b: b.update(type="tenure-receipt-bundle/v2"), "bundle:format"),
    "no-entry": (lambda b: b.pop("entry"), "bundle:format"),
    "key-mismatch": (
        lambda b: b["keys"][0].update(publicKeyMultibase=OTHER_DID.removeprefix("did:key:")),
        "keys",
    ),
}


@pytest.mark.parametrize("name", TAMPERS)
def test_tampering_fails_with_the_check_named(
    sample: Bundle, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tamper, check = TAMPERS[name]
    tampered = copy.deepcopy(sample)
    tamper(tampered)
    assert check in failed(tampered)
    with pytest.raises(BundleError) as raised:
        check_bundle(tampered, own_keys(sample))
    assert raised.value.check in failed(tampered)
    trust = [arg for did in own_keys(sample) for arg in ("--trust", did)]
    assert main([save(tmp_path / "tampered.json", tampered), *trust]) == 1
    assert f"✗ {check}:" in capsys.readouterr().out


def test_cli_process_exits_1_naming_the_failed_check(sample: Bundle, tmp_path: Path) -> None:
    tampered = copy.deepcopy(sample)
    tampered["receipt"]["_provenance"]["proof"]["proofValue"] = "z" + "2" * 87
    trust = [arg for did in own_keys(sample) for arg in ("--trust", did)]
    done = verify_cli(save(tmp_path / "tampered.json", tampered), "--json", *trust)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] == "fail"
    assert [c["check"] for c in result["checks"] if not c["ok"]] == ["proof"]


def test_trusting_another_did_fails(sample: Bundle, tmp_path: Path) -> None:
    assert {"keys", "issuer", "checkpoint"} <= set(failed(sample, {OTHER_DID}))
    done = verify_cli(save(tmp_path / "bundle.json", sample), "--trust", OTHER_DID)
    assert done.returncode == 1
    assert "✗ keys: not trusted: did:key:" in done.stdout


def test_keyring_from_the_keys_endpoint_passes(
    api: httpx.Client, sample: Bundle, tmp_path: Path
) -> None:
    keyring = save(tmp_path / "keyring.json", api.get("/api/v1/keys").json())
    saved = save(tmp_path / "bundle.json", sample)
    done = verify_cli(saved, "--keys", keyring)
    assert done.returncode == 0, done.stdout
    assert "from the bundle itself" not in done.stdout
    did = sample["keys"][0]["did"]
    assert main([saved, "--trust", did, "--json"]) == 0


def test_bad_usage_and_unreadable_input_exit_2(
    sample: Bundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = save(tmp_path / "bundle.json", sample)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    keyring = save(tmp_path / "keyring.json", {"keys": "nope"})
    for argv in (
        [],
        [good, "--trust", "did:web:example.com"],
        [good, "--trust", OTHER_DID, "--keys", keyring],
        [good, "--keys", keyring],
        [good, "--keys", str(tmp_path / "missing.json")],
        [str(tmp_path / "missing.json")],
        [str(garbage)],
        [good, str(garbage)],
        [good, "--frobnicate"],
    ):
        assert main(argv) == 2, argv
    assert "not JSON" in capsys.readouterr().out
    done = verify_cli(str(garbage))
    assert done.returncode == 2 and "ERROR" in done.stdout
    helped = verify_cli("--help")
    assert helped.returncode == 0 and "exit codes" in helped.stdout


def test_bare_response_without_trust_fails_with_a_hint(api: httpx.Client, tmp_path: Path) -> None:
    saved = save(tmp_path / "response.json", acquire(api))
    done = verify_cli(saved)
    assert done.returncode == 1
    assert "✗ issuer" in done.stdout and "--trust" in done.stdout and "--keys" in done.stdout
    keyring = save(tmp_path / "keyring.json", api.get("/api/v1/keys").json())
    assert verify_cli(saved, "--keys", keyring).returncode == 0


def test_earlier_checkpoint_extended_by_consistency(api: httpx.Client, tmp_path: Path) -> None:
    index = events(api, 3)
    first = api.get("/api/v1/log/checkpoint").json()
    events(api, 5)
    response = api.get(f"/api/v1/log/bundle/{index}", params={"treeSize": first["treeSize"]})
    assert response.status_code == 200, response.text
    bundle = response.json()
    assert bundle["checkpoint"] == first
    consistency = bundle["consistency"]
    assert consistency["first"] == first["treeSize"] < consistency["second"]
    assert verify_bundle(bundle, trusted(api)).ok
    trust = [arg for did in trusted(api) for arg in ("--trust", did)]
    assert main([save(tmp_path / "extended.json", bundle), *trust]) == 0
    assert consistency["hashes"]
    for which in range(len(consistency["hashes"])):
        tampered = copy.deepcopy(bundle)
        hashes = tampered["consistency"]["hashes"]
        hashes[which] = flip_b64(hashes[which])
        assert failed(tampered) == ["consistency"], which
    tampered = copy.deepcopy(bundle)
    later = tampered["consistency"]["checkpoint"]
    later["note"] = flip_note_signature(later["note"])
    assert failed(tampered) == ["consistency"]


def test_bundle_parameters_outside_the_tree_are_400(api: httpx.Client) -> None:
    events(api, 2)
    size = api.get("/api/v1/log/checkpoint").json()["treeSize"]
    events(api, 2)
    for params, path, field in (
        ({}, f"/api/v1/log/bundle/{size + 10}", "index"),
        ({"treeSize": size}, f"/api/v1/log/bundle/{size}", "index"),
        ({"treeSize": size + 1}, "/api/v1/log/bundle/0", "treeSize"),  # never signed
        ({"treeSize": size + 100}, "/api/v1/log/bundle/0", "treeSize"),
    ):
        response = api.get(path, params=params)
        assert response.status_code == 400, (path, params)
        error = response.json()["data"]["error"]
        assert error["field"] == field and field in error["message"]
    assert api.get("/api/v1/log/bundle/-1").status_code == 400


def test_callers_own_saved_response_assembled_into_a_bundle(
    api: httpx.Client, tmp_path: Path
) -> None:
    saved = acquire(api)
    events(api, 4)
    index = saved["data"]["ledger"]["logIndex"]
    checkpoint = api.get("/api/v1/log/checkpoint").json()
    proof = api.get(
        "/api/v1/log/proof/inclusion", params={"index": index, "treeSize": checkpoint["treeSize"]}
    ).json()
    entry = api.get("/api/v1/log/entries", params={"start": index, "end": index + 1}).json()
    keys = api.get("/api/v1/keys").json()["keys"]
    bundle = {
        "type": BUNDLE_TYPE,
        "receipt": {**saved, "data": {k: v for k, v in saved["data"].items() if k != "ownerToken"}},
        "entry": entry["entries"][0]["leaf"],
        "inclusion": {k: proof[k] for k in ("index", "treeSize", "hashes")},
        "checkpoint": checkpoint,
        "keys": keys,
    }
    report = verify_bundle(bundle, own_keys(bundle))
    assert report.ok, report.as_data()
    assert "manifest:tenure.ledger.entry" in [c.name for c in report.checks]
    trust = [arg for did in own_keys(bundle) for arg in ("--trust", did)]
    assert main([save(tmp_path / "own.json", bundle), *trust]) == 0
    bundle["receipt"]["data"]["fencingToken"] += 1
    assert "manifest:tenure.data" in failed(bundle)


def test_verify_endpoint_accepts_a_bundle(api: httpx.Client, sample: Bundle) -> None:
    served = api.post("/api/v1/verify-provenance", json=sample).json()
    assert served["data"]["status"] == "pass", served
    assert "inclusion" in [c["check"] for c in served["data"]["checks"]]
    tampered = copy.deepcopy(sample)
    tampered["entry"] = flip_b64(sample["entry"], 5)
    verdict = api.post("/api/v1/verify-provenance", json=tampered).json()["data"]
    assert verdict["status"] == "fail"
    assert "entry" in [c["check"] for c in verdict["checks"] if not c["ok"]]


def test_bundle_across_a_key_rotation(fresh_server: Server, tmp_path: Path) -> None:
    """An old checkpoint signed by the rotated-out key, extended to one by the new key."""
    fresh_server.start()
    with fresh_server.client() as api:
        index = events(api, 3)
        old = api.get("/api/v1/log/checkpoint").json()
        saved = save(tmp_path / "keyring-old.json", api.get("/api/v1/keys").json())
    fresh_server.stop()
    fresh_server.rotate_keys()
    fresh_server.start()
    with fresh_server.client() as api:
        events(api, 2)
        response = api.get(f"/api/v1/log/bundle/{index}", params={"treeSize": old["treeSize"]})
        bundle = response.json()
        assert len(bundle["keys"]) == 2
        assert verify_bundle(bundle, trusted(api)).ok
    trust = [arg for did in own_keys(bundle) for arg in ("--trust", did)]
    assert main([save(tmp_path / "rotated.json", bundle), *trust]) == 0
    assert main([save(tmp_path / "rotated2.json", bundle), "--keys", saved]) == 1  # new key unknown


@pytest.mark.skipif(
    not node_available(), reason="Node.js verifier not installed (npm install in tests/interop)"
)
def test_bundle_receipts_verify_with_digital_bazaar(api: httpx.Client) -> None:
    index = events(api, 1)
    credentials = [fetch_bundle(api, index, h)["receipt"]["_provenance"] for h in (None, RDFC)]
    results = run_node_verifier(credentials, api.get("/api/v1/contexts").json())
    assert [r["verified"] for r in results] == [True, True], results
