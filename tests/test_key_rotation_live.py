"""`tenure keys rotate` on a running server takes effect at once, without a restart, and every
receipt and checkpoint signed around the switch keeps verifying under the published periods."""

from __future__ import annotations

import base64
import signal
import threading
import time
from typing import Any

import httpx
import pytest

from tests.conftest import Server, lease, rid
from verify.receipt import verify_receipt
from verify.trust import keyring_periods


def active_did(client: httpx.Client) -> str:
    keys = client.get("/api/v1/keys").json()["keys"]
    return str(next(key["did"] for key in keys if key["active"]))


def wait_for_new_key(client: httpx.Client, old: str, seconds: float) -> float:
    started = time.monotonic()
    while active_did(client) == old:
        assert time.monotonic() - started < seconds, "the server still signs with the old key"
        time.sleep(0.02)
    return time.monotonic() - started


class Load:
    """Lease traffic from another thread, every answer kept (bounded in count and time)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.answers: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        with self.server.client() as client:
            deadline = time.monotonic() + 30
            while not self.stop.is_set() and len(self.answers) < 3000:
                assert time.monotonic() < deadline
                self.answers.append(lease(client, "acquire", resource=rid(), holder="w").json())

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(30)


def entry_of(client: httpx.Client, index: int) -> bytes:
    found = client.get("/api/v1/log/entries", params={"start": index, "end": index + 1}).json()
    return base64.b64decode(found["entries"][0]["leaf"])


def check_all(client: httpx.Client, answers: list[dict[str, Any]]) -> set[str]:
    """Every receipt verifies under the key periods the server now publishes (a signature dated
    outside its key's period fails `issuer`); the issuers seen."""
    periods = keyring_periods(client.get("/api/v1/keys").json()["keys"])
    issuers = set()
    for answer in answers:
        entry = entry_of(client, answer["data"]["ledger"]["logIndex"])
        report = verify_receipt(answer, periods, entry=entry)
        assert report.ok, [c for c in report.checks if not c.ok]
        issuers.add(answer["_provenance"]["issuer"])
    return issuers


def test_rotation_under_load_takes_effect_within_two_seconds_in_every_worker(
    fresh_server: Server,
) -> None:
    server = fresh_server.start()
    with server.client() as client:
        old = active_did(client)
        before = client.get("/api/v1/log/checkpoint").json()
        with Load(server) as load:
            while len(load.answers) < 20:
                time.sleep(0.01)
            server.rotate_keys()
            took = wait_for_new_key(client, old, 3.0)
            count = len(load.answers)
            while len(load.answers) < count + 20:
                time.sleep(0.01)
        assert took < 3.0  # ROTATE_AHEAD_MS after the first worker saw it, plus its poll
        after = client.get("/api/v1/log/checkpoint").json()
        assert after["treeSize"] > before["treeSize"]
        assert check_all(client, load.answers) == {old, active_did(client)}
        report = client.post("/api/v1/verify-provenance", json=load.answers[0]).json()["data"]
        assert report["status"] == "pass"
        keys = client.get("/api/v1/keys").json()["keys"]
        listed = client.get("/api/v1/log/checkpoints").json()["checkpoints"]
    assert [key["validUntil"] is None for key in keys] == [False, True]
    assert keys[0]["validUntil"] == keys[1]["validFrom"]
    assert {c["keyDid"] for c in listed} == {old, keys[1]["did"]}


def test_sighup_switches_at_once(fresh_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENURE_KEY_WATCH_INTERVAL", "3600")  # only the signal can do it
    server = fresh_server.start()
    with server.client() as client:
        old = active_did(client)
        first = lease(client, "acquire", resource=rid(), holder="w").json()
        server.rotate_keys()
        time.sleep(0.3)
        assert active_did(client) == old  # no watch, no signal: still the old key
        assert server.process is not None
        server.process.send_signal(signal.SIGHUP)
        wait_for_new_key(client, old, 4.0)
        second = lease(client, "acquire", resource=rid(), holder="w").json()
        assert check_all(client, [first, second]) == {old, active_did(client)}
        assert client.get("/readyz").status_code == 200
