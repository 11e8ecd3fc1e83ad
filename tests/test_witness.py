"""A witness key never cosigns both sides of a fork: its memory lives beside the key, so across
separate `tenure monitor --once` runs — with or without a state file, with any cosign folder —
a second root for a cosigned size, a smaller tree, or a larger one that does not extend what it
cosigned is refused with both checkpoints as evidence. Nor does it cosign lease findings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from api.cli import main
from tests.conftest import Server
from tests.hostile_log import ledger_routes, serve
from tests.test_audit import Ledger, clean, over_capacity
from tests.test_monitor import ORIGIN, grow, keyring, log_a, monitor
from verify.multikey import did_key, public_key_from_did
from verify.note import verify_note

__all__ = ["log_a"]  # the fixture, used by name


def cosignatures(folder: Path) -> list[dict[str, Any]]:
    path = folder / "cosignatures.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("with_state", [False, True])
def test_one_key_never_cosigns_both_sides_of_a_fork(
    log_a: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str], with_state: bool
) -> None:
    log_b = Server(tmp_path / "b", ["--origin", ORIGIN])
    shutil.copytree(log_a.root / "keys", log_b.root / "keys")  # one log key, two trees
    log_b.start()
    keys, key = keyring(log_a, tmp_path / "keys.json"), tmp_path / "witness.pem"
    runs = iter(range(100))

    def run(url: str) -> tuple[int, list[dict[str, Any]], Path]:
        n = next(runs)  # a fresh cosign folder (and state file) every run
        folder, args = tmp_path / f"cosigned{n}", ["--keys", str(keys)]
        if with_state:
            args += ["--state", str(tmp_path / f"state{n}.json")]
        code, events = monitor(
            capsys, url, *args, "--cosign-key", str(key), "--cosign-dir", str(folder)
        )
        return code, events, folder

    try:
        assert grow(log_a, 1) == grow(log_b, 1) == 2  # same size, different roots
        code, events, folder = run(log_a.url)
        assert code == 0 and events[-1]["cosigned"] is True, events
        code, events, folder = run(log_b.url)
        assert code == 1, events
        refused = next(e for e in events if e["event"] == "violation")
        assert refused["check"] == "witness-split-view", refused
        cosigned, served = refused["evidence"]["cosigned"], refused["evidence"]["served"]
        assert cosigned["treeSize"] == served["treeSize"] == 2
        assert cosigned["rootHash"] != served["rootHash"]
        public = public_key_from_did(json.loads(keys.read_text())["keys"][0]["did"])
        for note in (cosigned["note"], served["note"]):  # the log signed both: the evidence
            verify_note(note, ORIGIN, public.public_bytes_raw())
        assert cosignatures(folder) == []
        assert grow(log_a, 1) == 4  # the side it cosigned grows: consistent, cosigned
        assert run(log_a.url)[0] == 0
        assert grow(log_b, 2) == 6  # the other side grows past it: no proof can join them
        code, events, folder = run(log_b.url)
    finally:
        log_b.stop()
    assert code == 1 and cosignatures(folder) == []
    assert next(e for e in events if e["event"] == "violation")["check"] == "witness-split-view"
    memory = json.loads((tmp_path / "witness.pem.witness.json").read_text())
    assert memory["origins"][ORIGIN]["treeSize"] == 4


def hand_made(
    capsys: pytest.CaptureFixture[str], ledger: Ledger, key: Path, folder: Path
) -> tuple[int, list[dict[str, Any]]]:
    with serve(ledger_routes(ledger)) as url:
        trust = did_key(ledger.key.public_key())
        args = ["--trust", trust, "--cosign-key", str(key), "--cosign-dir", str(folder)]
        return monitor(capsys, url, *args)


def test_a_rolled_back_tree_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, key = clean(), tmp_path / "w.pem"
    assert hand_made(capsys, ledger, key, tmp_path / "c1")[0] == 0
    shorter = Ledger(ledger.entries[:3], ledger.key)
    code, events = hand_made(capsys, shorter, key, tmp_path / "c2")
    assert code == 1 and cosignatures(tmp_path / "c2") == []
    refused = next(e for e in events if e["event"] == "violation")
    assert refused["check"] == "witness-rollback"
    assert (
        refused["evidence"]["cosigned"]["treeSize"],
        refused["evidence"]["served"]["treeSize"],
    ) == (8, 3)
    assert hand_made(capsys, ledger, key, tmp_path / "c3")[0] == 0  # the same tree again is fine


def test_lease_findings_are_never_cosigned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, folder = tmp_path / "w.pem", tmp_path / "cosigned"
    code, events = hand_made(capsys, over_capacity(), key, folder)
    assert code == 1 and [e["check"] for e in events if e["event"] == "violation"] == ["capacity"]
    assert events[-1]["event"] == "checkpoint" and events[-1]["cosigned"] is False
    assert cosignatures(folder) == [] and not (folder / "checkpoint").exists()
    assert not (tmp_path / "w.pem.witness.json").exists()


def test_an_unreadable_memory_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger, key = clean(), tmp_path / "w.pem"
    assert hand_made(capsys, ledger, key, tmp_path / "c")[0] == 0
    (tmp_path / "w.pem.witness.json").write_text('{"type": "something else"}')
    with serve(ledger_routes(ledger)) as url:
        trust = did_key(ledger.key.public_key())
        assert main(["monitor", url, "--once", "--trust", trust, "--cosign-key", str(key)]) == 2
    assert "the witness's memory is unreadable" in capsys.readouterr().err
