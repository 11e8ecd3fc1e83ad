"""A witness (`tenure monitor --listen`) over a hand-made log served on a real socket: it cosigns
entries that keep the lease rules and refuses those that do not; an unreadable memory is a 500;
bad witness options anywhere are exit 2 naming them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_log import ledger_routes, serve
from tests.test_audit import Ledger, clean
from tests.test_witness_network import make_witness
from verify import cli
from verify.cosignature import verify_cosignature
from verify.multikey import did_key
from verify.witnesses import parse_witness_vkey


def test_bad_witness_options_are_exit_2_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = make_witness(tmp_path, "w.test")
    file = str(tmp_path / "none.json")
    for args, named in [
        (["--witness-threshold", "1"], "--witness"),
        (["--witness", w.vkey, "--witness-threshold", "2"], "--witness-threshold must be 1..1"),
        (["--witness", w.vkey.replace("+", "+0", 1)], "key ID"),
    ]:
        assert cli.main([file, *args]) == 2
        assert named in capsys.readouterr().err
    serve = [sys.executable, "-m", "api", "serve", "--data", str(tmp_path / "d")]
    done = subprocess.run([*serve, "--witness", w.vkey], capture_output=True, text=True)
    assert done.returncode == 2 and "--witness" in done.stderr, done.stderr
    monitor = [sys.executable, "-m", "api", "monitor", "http://127.0.0.1:1", "--listen", ":1"]
    done = subprocess.run(monitor, capture_output=True, text=True)
    assert done.returncode == 2 and "--listen" in done.stderr, done.stderr


@pytest.mark.parametrize("broken", [False, True])
def test_a_witness_cosigns_only_entries_that_keep_the_lease_rules(
    tmp_path: Path, broken: bool
) -> None:
    ledger = clean()
    if broken:  # a second holder granted the same resource while the first still holds it
        ledger = Ledger().add("acquire", 1, 0, 10).add("acquire", 2, 1, 10)
    leaves = ledger.leaves()
    note = ledger.checkpoint(leaves, len(leaves))["note"]
    w = make_witness(tmp_path, "w.test")
    w.port = 0  # any free one: the witness says which
    with serve(ledger_routes(ledger)) as url:
        w.start(url, "--trust", did_key(ledger.key.public_key()))
        try:
            answer = w.add(f"old 0\n\n{note}")
        finally:
            assert w.process is not None
            w.process.terminate()
            w.process.wait(timeout=20)
    memory = Path(str(w.key) + ".witness.json")
    if broken:
        assert (answer.status_code, memory.exists()) == (422, False), answer.text
        assert "lease rules" in answer.text
    else:
        assert answer.status_code == 200, answer.text
        verify_cosignature(note + answer.text, w.name, parse_witness_vkey(w.vkey).public)


def test_an_unreadable_memory_is_a_500_and_no_cosignature(tmp_path: Path) -> None:
    ledger = clean()
    leaves = ledger.leaves()
    note = ledger.checkpoint(leaves, len(leaves))["note"]
    w = make_witness(tmp_path, "w.test")
    w.port = 0  # any free one: the witness says which
    with serve(ledger_routes(ledger)) as url:
        w.start(url, "--trust", did_key(ledger.key.public_key()))
        try:
            Path(str(w.key) + ".witness.json").write_text("{not json")
            answer = w.add(f"old 0\n\n{note}")
            assert (answer.status_code, answer.text) == (
                500,
                "the witness cannot read or write its memory\n",
            )
            assert w.process is not None and w.process.poll() is None  # still serving
        finally:
            assert w.process is not None
            w.process.terminate()
            w.process.wait(timeout=20)
