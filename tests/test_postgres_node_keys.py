"""Signing keys across nodes (decisions/0009): every node must hold the same keys folder. A live
rotation made on one node (`tenure keys rotate` there) retires the old key for the whole log at
the instant that node records; a node whose folder lacks the new key reports itself unhealthy
(503, ``keys: retired``) so the load balancer drops it, refuses to start with that folder, and
switches by itself once the new key file reaches its folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, lease, rid
from tests.pg_nodes import two_nodes


def active_did(api: httpx.Client) -> str:
    keys = api.get("/api/v1/keys").json()["keys"]
    return str(next(key["did"] for key in keys if key["active"]))


def test_a_rotation_on_one_node_reaches_the_other_with_the_key_file(
    postgres: Any, tmp_path: Path
) -> None:
    with two_nodes(postgres, tmp_path) as nodes:
        nodes.b.stop()  # b gets a copy of the keys folder of its own, as on another host
        own = tmp_path / "b-keys"
        shutil.copytree(nodes.keys, own)
        nodes.b.args += ["--keys", str(own)]
        nodes.b.start()
        with nodes.a.client() as a, nodes.b.client() as b:
            old = active_did(a)
            rotate = [sys.executable, "-m", "api", "keys", "rotate", "--keys", str(nodes.keys)]
            subprocess.run(rotate, cwd=ROOT, check=True, capture_output=True)
            _until(lambda: active_did(a) != old)
            _until(lambda: b.get("/healthz").status_code == 503)
            assert b.get("/healthz").json()["data"]["keys"] == "retired"

            new = [key for key in nodes.keys.glob("signing-*.key") if not (own / key.name).exists()]
            for key in new:  # the new key file reaches b's folder: b switches by itself
                shutil.copy2(key, own / key.name)
            _until(lambda: b.get("/healthz").status_code == 200)
            assert active_did(b) == active_did(a) != old
            granted = lease(b, "acquire", resource=rid(), holder="w")
            assert granted.status_code == 201, granted.text

        nodes.b.stop()
        for key in new:
            (own / key.name).unlink()
        with pytest.raises(RuntimeError, match="retired by a rotation"):
            nodes.b.start()  # an out-of-date folder cannot serve this log


def _until(done: Any, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.05)  # polling the nodes' key watch (each second), not lease time
