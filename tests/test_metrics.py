"""`/metrics` and `/readyz` as an operator meets them: scrape a live server after a known
workload and parse the text with prometheus-client's own parser; counts must match."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from api.settings import Settings
from ledger.storage import KeyRecord
from tests.conftest import Server, lease, rid


def scrape(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_known_workload_is_counted(fresh_server: Server) -> None:
    server = fresh_server.start()
    with server.client() as client:
        names = [rid() for _ in range(3)]
        owners = [lease(client, "acquire", resource=n, holder="w").json()["data"] for n in names]
        assert lease(client, "acquire", resource=names[0], holder="x").status_code == 409
        lease(client, "release", resource=names[1], ownerToken=owners[1]["ownerToken"])
        assert math.isnan(value(scrape(client), "tenure_checkpoint_age_seconds"))  # none yet
        client.get("/api/v1/log/checkpoint")
        samples = scrape(client)
    assert value(samples, "tenure_lease_answers_total", op="acquire", outcome="GRANTED") == 3
    assert value(samples, "tenure_lease_answers_total", op="acquire", outcome="HELD") == 1
    assert value(samples, "tenure_lease_answers_total", op="release", outcome="RELEASED") == 1
    assert value(samples, "tenure_leases_live") == 2
    assert value(samples, "tenure_ledger_tree_size") == 4  # three grants and a release
    route = "/api/v1/lease/{op}"  # the template, never the resource name
    count = value(samples, "tenure_http_request_duration_seconds_count", route=route, method="POST")
    assert count == 5
    assert not any(n in str(key) for key in samples for n in names)
    assert value(samples, "tenure_commit_batch_size_sum") >= 4
    assert value(samples, "tenure_commit_duration_seconds_count") >= 1
    assert 0 <= value(samples, "tenure_checkpoint_age_seconds") < 60


def test_waiters_are_a_gauge(fresh_server: Server) -> None:
    server = fresh_server.start()
    with server.client() as client:
        name = rid()
        owner = lease(client, "acquire", resource=name, holder="a").json()["data"]["ownerToken"]
        answers: list[int] = []

        def wait() -> None:
            with server.client() as other:
                body = {"resource": name, "holder": "b", "waitSeconds": 20}
                answers.append(lease(other, "acquire", **body).status_code)

        waiter = threading.Thread(target=wait)
        waiter.start()
        deadline = time.monotonic() + 10
        while value(scrape(client), "tenure_waiters_queued") != 1:
            assert time.monotonic() < deadline, "the waiter never showed"
            time.sleep(0.02)
        lease(client, "release", resource=name, ownerToken=owner)
        waiter.join(20)
        assert answers == [201]
        assert value(scrape(client), "tenure_waiters_queued") == 0


def test_rate_limited_requests_are_counted(fresh_server: Server) -> None:
    server = fresh_server
    server.args = ["--rate-limit", "2"]
    server.start()
    refused = 0
    with server.client() as client:
        for _ in range(30):
            refused += client.get("/api/v1/keys").status_code == 429
        samples = scrape(client)
    assert refused > 0
    assert value(samples, "tenure_rate_limited_total", route="/api/v1/keys") == refused


def test_readyz_checks_storage_keys_and_head(fresh_server: Server) -> None:
    server = fresh_server.start()
    with server.client() as client:
        answer = client.get("/readyz")
    assert answer.status_code == 200
    assert answer.json()["data"] == {
        "status": "pass",
        "checks": {"storage": "ok", "keys": "ok", "ledger": "ok"},
    }


def test_readyz_fails_when_another_key_took_over(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").status_code == 200
        storage = client.app.state.edge.core.storage  # type: ignore[attr-defined]
        storage.record_key_use(KeyRecord("did:key:zOther", b"\0" * 32, "zOther", 2**40, None))
        answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["data"]["checks"]["keys"] == "the signing key is not the log's active key"


def server_errors(client: TestClient, route: str, status: str) -> float:
    """Process-wide counters: in-process tests compare before and after."""
    samples = scrape(client)
    return value(samples, "tenure_http_server_errors_total", route=route, status=status)


def test_5xx_answers_are_counted_by_route(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", keys_dir=tmp_path / "keys")
    app = create_app(settings)

    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/boom/{thing}", boom)
    with TestClient(app, raise_server_exceptions=False) as client:
        before = server_errors(client, "/boom/{thing}", "500")
        assert client.get("/boom/secret-name").status_code == 500
        assert client.get("/boom/other-name").status_code == 500
        assert server_errors(client, "/boom/{thing}", "500") == before + 2
        assert client.request("BREW", "/no/such/path").status_code in (404, 405)
        text = client.get("/metrics").text
    assert "secret-name" not in text and "BREW" not in text and "/no/such" not in text
    assert 'tenure_http_request_duration_seconds_count{method="other",route="unmatched"}' in text


def test_multiprocess_mode_sums_from_the_shared_folder(
    fresh_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PROMETHEUS_MULTIPROC_DIR (several workers) the counters live in files there and
    /metrics sums them; the state gauges are still the answering process's."""
    shared = tmp_path / "prometheus"
    shared.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(shared))
    server = fresh_server.start()
    with server.client() as client:
        for _ in range(2):
            lease(client, "acquire", resource=rid(), holder="w")
        samples = scrape(client)
    assert value(samples, "tenure_lease_answers_total", op="acquire", outcome="GRANTED") == 2
    assert value(samples, "tenure_leases_live") == 2
    assert any(path.suffix == ".db" for path in shared.iterdir())


def test_several_workers_answer_the_same_sums_without_any_setup(tmp_path: Path) -> None:
    """`tenure serve --workers 2` with no PROMETHEUS_MULTIPROC_DIR of the operator's: whichever
    worker a scrape reaches, it counts every worker's answers (a private folder the parent made
    and removes at exit)."""
    server = Server(tmp_path, ["--workers", "2"]).start()
    assert server.process is not None
    parent = server.process.pid
    try:
        for _ in range(20):
            with httpx.Client(base_url=server.url) as client:  # new connections: both workers
                lease(client, "acquire", resource=rid(), holder="w")
        seen = set()
        for _ in range(8):
            with httpx.Client(base_url=server.url) as client:
                samples = scrape(client)
            seen.add(value(samples, "tenure_lease_answers_total", op="acquire", outcome="GRANTED"))
        assert seen == {20}
        folder = _metrics_folder_of(parent)
        assert folder.is_dir() and folder.stat().st_mode & 0o077 == 0
    finally:
        server.stop()
    assert not folder.exists()


def _metrics_folder_of(parent: int) -> Path:
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    environ = Path(f"/proc/{children[0]}/environ").read_bytes().split(b"\0")
    found = [v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return Path(found[0].partition(b"=")[2].decode())


def test_a_writer_waiting_for_the_ledgers_lock_is_measured(fresh_server: Server) -> None:
    """Another writer (here the test, as `tenure lease revoke` would) holds the ledger's write
    lock: the server's next commit waits for it, and `/metrics` says how long."""
    import fcntl

    server = fresh_server.start()
    with server.client() as client:
        lease(client, "acquire", resource=rid(), holder="w")
        before = value(scrape(client), "tenure_ledger_lock_wait_seconds_sum")
        with open(server.data / "tenure.lock", "rb+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            releaser = threading.Timer(0.3, fcntl.flock, (lock, fcntl.LOCK_UN))
            releaser.start()
            assert lease(client, "acquire", resource=rid(), holder="w").status_code == 201
            releaser.join()
        waited = value(scrape(client), "tenure_ledger_lock_wait_seconds_sum") - before
    assert 0.25 <= waited < 5


def test_each_sweep_is_timed_with_its_expiries(tmp_path: Path) -> None:
    """The sweeper's share of the ledger's lock is readable: one observation per sweep, its
    time the expiries it wrote (fixed lease clock, the sweep driven by hand)."""
    import asyncio

    from prometheus_client import REGISTRY

    from ledger.backends import open_storage
    from ledger.lease.calls import LeaseCall
    from ledger.writer.service import LeaseService
    from tests.names_key import NAMES

    def swept() -> tuple[float, float]:
        count = REGISTRY.get_sample_value("tenure_sweep_seconds_count")
        total = REGISTRY.get_sample_value("tenure_sweep_seconds_sum")
        assert count is not None and total is not None, "tenure_sweep_seconds is not exposed"
        return count, total

    now = [1_800_000_000_000]

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        service = LeaseService(storage, b"s" * 32, clock=lambda: now[0])
        await service.start()
        for n in range(50):
            await service.lease(LeaseCall("acquire", "t", f"r{n}", holder="w", ttl_seconds=1))
        count, total = swept()
        now[0] += 2000
        await service.sweep(now[0])
        assert storage.tree_size() == 100  # fifty grants, fifty expiries
        after_count, after_total = swept()
        assert after_count == count + 1 and after_total > total
        await service.stop()
        storage.close()

    asyncio.run(scenario())


def test_a_group_commit_is_observed_whether_it_lands_or_fails(tmp_path: Path) -> None:
    """Each group commit is counted once its turn has given the ledger's lock back: its size,
    duration and lock wait when it lands; a failure in ``tenure_commit_failures_total``."""
    import asyncio

    from prometheus_client import REGISTRY

    from ledger.backends import open_storage
    from ledger.storage import StorageError
    from ledger.writer.committer import GroupCommitter
    from tests.names_key import NAMES

    def figures() -> tuple[float, ...]:
        names = ("tenure_commit_batch_size_count", "tenure_commit_duration_seconds_count")
        names += ("tenure_ledger_lock_wait_seconds_count", "tenure_commit_failures_total")
        return tuple(REGISTRY.get_sample_value(name) or 0.0 for name in names)

    def fails(tx: object) -> None:
        raise RuntimeError("the disk is gone")

    async def scenario() -> None:
        storage = open_storage(tmp_path, names=NAMES)
        committer = GroupCommitter(storage, asyncio.get_running_loop())
        try:
            before = figures()
            await committer.submit([])
            landed = figures()
            assert [a - b for a, b in zip(landed, before, strict=True)] == [1, 1, 1, 0]
            with pytest.raises(StorageError, match="the disk is gone"):
                await committer.submit(fails)
            failed = figures()
            assert [a - b for a, b in zip(failed, landed, strict=True)] == [1, 1, 1, 1]
        finally:
            committer.close()
            storage.close()

    asyncio.run(scenario())
