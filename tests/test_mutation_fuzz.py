"""A mutation fuzz of a real bundle and a real export (scripts/mutation_fuzz.py) finds no
accepted change to signed content and no traceback, in seconds."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from scripts.mutation_fuzz import fuzz_bundle, fuzz_export
from tests.conftest import Server
from tests.test_audit import read, tenure
from tests.test_bundle import RDFC, events, fetch_bundle, trusted

MUTATIONS = 300


def test_bundle_mutations(api: httpx.Client) -> None:
    keys = trusted(api)
    index = events(api, 6) - 2
    started = time.perf_counter()
    problems = fuzz_bundle(fetch_bundle(api, index), keys, MUTATIONS)
    problems += fuzz_bundle(fetch_bundle(api, index, RDFC), keys, MUTATIONS // 3, seed=9)
    assert not problems, "\n".join(problems[:20])
    assert time.perf_counter() - started < 30


def test_export_mutations(fresh_server: Server, tmp_path: Path) -> None:
    fresh_server.start()
    with fresh_server.client() as api:
        events(api, 12)
        dids = list(trusted(api))
    fresh_server.kill()
    out = tmp_path / "ledger.jsonl"
    keys = str(fresh_server.root / "keys")
    run = tenure("export", "--data", str(fresh_server.data), "--out", str(out), "--keys", keys)
    assert run.returncode == 0, run.stderr
    started = time.perf_counter()
    problems = fuzz_export(read(out), dids, MUTATIONS)
    assert not problems, "\n".join(problems[:20])
    assert time.perf_counter() - started < 30
