"""The test PostgreSQL server is real and durable: the backend's tests rely on both."""

from __future__ import annotations

import psycopg


def test_a_real_durable_server_with_a_fresh_database_per_test(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
        fsync = conn.execute("SHOW fsync").fetchone()
        synchronous = conn.execute("SHOW synchronous_commit").fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
    assert version is not None and int(version[0]) >= 150000
    assert fsync == ("on",) and synchronous == ("on",)
    assert tables == (0,)
