"""Two witnesses (`tenure monitor --listen`, real processes and sockets) cosign what a log
(`tenure serve --witness URL=VKEY`) pushes, and the log serves the cosignatures in its note; they
refuse a forked checkpoint (same origin and size, another root), a rollback, another origin and
another key; a bundle passes `verify-provenance --witness-threshold 2` only with both
cosignatures, and so do `tenure audit --witnessed` and the client."""

from __future__ import annotations

import base64
import json
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from api.client import Client, ReceiptInvalid
from ledger.keys.keyring import load_signing_keys
from ledger.log.checkpoint import checkpoint_body, sign_note
from tests.conftest import ROOT, Server, free_port, lease, rid
from verify import cli
from verify.cosignature import cosignature_vkey, verify_cosignature
from verify.witnesses import parse_witness_vkey

ORIGIN = "witness.test/log"


@dataclass
class Witness:
    name: str
    key: Path
    port: int
    vkey: str
    state: Path
    process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_url: str, *trust: str) -> None:
        cmd = [sys.executable, "-m", "api", "monitor", log_url, *trust, "--json"]
        cmd += ["--cosign-key", str(self.key), "--cosign-name", self.name]
        cmd += ["--state", str(self.state), "--listen", f"127.0.0.1:{self.port}"]
        self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while True:
            assert self.process.stdout is not None
            ready, _, _ = select.select([self.process.stdout], [], [], deadline - time.monotonic())
            assert ready, f"witness {self.name} said nothing in time"
            event = json.loads(self.process.stdout.readline())
            if event["event"] == "witness":
                assert event["vkey"] == self.vkey
                self.port = int(event["url"].rsplit(":", 1)[1])  # the one bound, if port 0
                return

    def add(self, body: str) -> httpx.Response:
        return httpx.post(self.url + "/add-checkpoint", content=body.encode(), timeout=30)


def make_witness(root: Path, name: str) -> Witness:
    private = Ed25519PrivateKey.generate()
    key = root / f"{name}.pem"
    key.write_bytes(private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    vkey = cosignature_vkey(name, private.public_key().public_bytes_raw())
    return Witness(name, key, free_port(), vkey, root / f"{name}.state.json")


@dataclass
class Network:
    log: Server
    witnesses: list[Witness]


@pytest.fixture
def network(tmp_path: Path) -> Iterator[Network]:
    witnesses = [make_witness(tmp_path, "w1.test"), make_witness(tmp_path, "w2.test")]
    args = ["--origin", ORIGIN, "--workers", "1"]
    for w in witnesses:
        args += ["--witness", f"{w.url}={w.vkey}"]
    (tmp_path / "log").mkdir()
    log = Server(tmp_path / "log", args).start()
    keyring = tmp_path / "keys.json"
    keyring.write_text(httpx.get(log.url + "/api/v1/keys").text)
    try:
        for w in witnesses:
            w.start(log.url, "--keys", str(keyring))
        yield Network(log, witnesses)
    finally:
        for w in witnesses:
            if w.process is not None:
                w.process.terminate()
                w.process.wait(timeout=20)
        log.stop()


def grow(log: Server, leases: int) -> None:
    with log.client() as client:
        for _ in range(leases):
            grant = lease(client, "acquire", resource=rid(), holder="w", ttlSeconds=30)
            assert grant.status_code == 201, grant.text


def cosigned_note(log: Server, witnesses: list[Witness]) -> str:
    """The served note once every witness's cosignature is in it (the push is synchronous)."""
    note = httpx.get(log.url + "/checkpoint").text
    for w in witnesses:
        verify_cosignature(note, w.name, parse_witness_vkey(w.vkey).public)
    return note


def log_signed(log: Server, size: int, root: bytes) -> str:
    """A checkpoint note signed with the log's own key: what a log that forks would sign."""
    key = load_signing_keys(log.root / "keys")[-1].private_key
    return sign_note(checkpoint_body(ORIGIN, size, root), ORIGIN, key)


def test_witnesses_cosign_what_the_log_serves(network: Network) -> None:
    log, (w1, w2) = network.log, network.witnesses
    grow(log, 3)
    note = cosigned_note(log, [w1, w2])
    api_note = httpx.get(log.url + "/api/v1/log/checkpoint").json()["note"]
    assert api_note == note  # the same cosigned note on both routes
    grow(log, 2)  # the next checkpoint goes to the witnesses with a consistency proof
    later = cosigned_note(log, [w1, w2])
    assert later.split("\n")[1] > note.split("\n")[1]
    memory = json.loads(Path(str(w1.key) + ".witness.json").read_text())
    assert memory["origins"][ORIGIN]["treeSize"] == int(later.split("\n")[1])


def test_witnesses_refuse_a_fork_a_rollback_and_strangers(network: Network) -> None:
    log, (w1, w2) = network.log, network.witnesses
    grow(log, 2)
    older = httpx.get(log.url + "/api/v1/log/checkpoint").json()
    grow(log, 2)
    cosigned_note(log, [w1, w2])
    latest = httpx.get(log.url + "/api/v1/log/checkpoint").json()
    size, root = latest["treeSize"], base64.b64decode(latest["rootHash"])
    fork = log_signed(log, size, bytes(32))  # same origin and size, another root, log-signed
    rollback = older["note"]
    stranger = sign_note(checkpoint_body(ORIGIN, size, root), ORIGIN, Ed25519PrivateKey.generate())
    elsewhere = log_signed(log, size, root).replace(ORIGIN, "other.test/log", 1)
    for w in (w1, w2):
        answer = w.add(f"old {size}\n\n{fork}")
        assert (answer.status_code, answer.text) == (409, f"{size}\n")
        assert answer.headers["content-type"] == "text/x.tlog.size"
        answer = w.add(f"old {older['treeSize']}\n\n{rollback}")
        assert (answer.status_code, answer.text) == (409, f"{size}\n")  # not its size any more
        assert w.add(f"old {size}\n\n{rollback}").status_code == 400  # old beyond the checkpoint
        assert w.add(f"old {size}\n\n{stranger}").status_code == 403
        assert w.add(f"old {size}\n\n{elsewhere}").status_code == 404
        assert w.add(f"old {size}\n\n{latest['note']}").status_code == 200  # the true one, again
        memory = json.loads(Path(str(w.key) + ".witness.json").read_text())
        assert memory["origins"][ORIGIN]["treeSize"] == size
        assert base64.b64decode(memory["origins"][ORIGIN]["rootHash"]) == root


def test_a_bundle_needs_both_cosignatures(
    network: Network, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, (w1, w2) = network.log, network.witnesses
    grow(log, 3)
    cosigned_note(log, [w1, w2])
    bundle = httpx.get(log.url + "/api/v1/log/bundle/1").json()
    keys = tmp_path / "keys.json"
    keys.write_text(httpx.get(log.url + "/api/v1/keys").text)
    whole, cut = tmp_path / "whole.json", tmp_path / "cut.json"
    whole.write_text(json.dumps(bundle))
    bundle["checkpoint"]["note"] = drop_line(bundle["checkpoint"]["note"], w2.name)
    cut.write_text(json.dumps(bundle))
    both = ["--keys", str(keys), "--witness", w1.vkey, "--witness", w2.vkey, "--json"]
    code, report = verify(capsys, str(whole), *both, "--witness-threshold", "2")
    assert (code, report["status"]) == (0, "pass")
    assert "w1.test, w2.test (2 of 2 listed" in witness_check(report)
    code, report = verify(capsys, str(cut), *both, "--witness-threshold", "2")
    assert (code, report["status"]) == (1, "fail")
    assert "cosigned by w1.test (1 of 2 listed, 2 needed); w2.test:" in witness_check(report)
    code, report = verify(capsys, str(cut), *both, "--witness-threshold", "1")
    assert (code, report["status"]) == (0, "pass")


def drop_line(note: str, name: str) -> str:
    return "".join(line for line in note.splitlines(True) if not line.startswith(f"— {name} "))


def verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(list(args))
    return code, dict(json.loads(capsys.readouterr().out.splitlines()[0]))


def witness_check(report: dict[str, Any]) -> str:
    return str(next(c for c in report["checks"] if c["check"] == "witnesses")["detail"])


def test_an_audit_against_the_witnessed_checkpoint(network: Network, tmp_path: Path) -> None:
    log, (w1, w2) = network.log, network.witnesses
    grow(log, 3)
    cosigned_note(log, [w1, w2])
    checkpoint = httpx.get(log.url + "/api/v1/log/checkpoint").json()
    dids = [key["did"] for key in httpx.get(log.url + "/api/v1/keys").json()["keys"]]
    log.stop()
    out, whole, cut = tmp_path / "ledger.jsonl", tmp_path / "whole.json", tmp_path / "cut.json"
    exported = tenure("export", "--data", str(log.data), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    whole.write_text(json.dumps(checkpoint))
    cut.write_text(json.dumps(checkpoint | {"note": drop_line(checkpoint["note"], w1.name)}))
    trust = [arg for did in dids for arg in ("--trust", did)]
    both = [*trust, "--witness", w1.vkey, "--witness", w2.vkey, "--witness-threshold", "2"]
    audited = tenure("audit", str(out), "--witnessed", str(whole), *both)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "witnessed checkpoint: cosigned by w1.test, w2.test (2 of 2" in audited.stdout
    audited = tenure("audit", str(out), "--witnessed", str(cut), *both)
    assert audited.returncode == 1, audited.stdout + audited.stderr
    assert "witnesses: cosigned by w2.test (1 of 2 listed, 2 needed); w1.test:" in audited.stdout
    forged = checkpoint | {"note": log_signed(log, checkpoint["treeSize"], bytes(32))}
    whole.write_text(json.dumps(forged))  # signed, but not the exported tree: never passes
    assert tenure("audit", str(out), "--witnessed", str(whole), *trust).returncode == 2
    audited = tenure("audit", str(out), "--witnessed", str(whole), *both[len(trust) :], *trust)
    assert audited.returncode == 1 and "checkpoint-" in audited.stdout, audited.stdout


def tenure(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "api", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_client_reads_only_witnessed_checkpoints(network: Network) -> None:
    log, (w1, w2) = network.log, network.witnesses
    grow(log, 2)
    cosigned_note(log, [w1, w2])
    stranger = make_witness(log.root, "w3.test")
    with Client(log.url, witnesses=[w1.vkey, w2.vkey], witness_threshold=2) as client:
        assert client.checkpoint()["note"].count("— w") == 3  # the log and two witnesses
    few = Client(log.url, witnesses=[w1.vkey, stranger.vkey], witness_threshold=2)
    with few, pytest.raises(ReceiptInvalid, match=re.escape("cosigned by w1.test (1 of 2")):
        few.checkpoint()
    with pytest.raises(ValueError, match=re.escape("witness_threshold must be 1..2")):
        Client(log.url, witnesses=[w1.vkey, w2.vkey], witness_threshold=3)
