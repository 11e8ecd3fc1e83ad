"""Never a 500 (standards: bad input gets a clear error and changes nothing): hypothesis throws
arbitrary JSON — NaN, huge integers, lone surrogates, wrong types, unknown and known fields — and
raw bytes at every POST endpoint of a live server."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import rid

FIELDS = [
    "op", "resource", "holder", "agent_id", "actorDid", "ttlSeconds", "ttl_seconds", "ownerToken",
    "owner_token", "fencingToken", "capacity", "waitSeconds", "requestId", "fingerprint", "scope",
    "result", "tenantId", "namespace", "deadSeconds", "data", "_provenance", "type",
]  # fmt: skip
PATHS = [
    "/api/v1/lease",
    *(f"/api/v1/lease/{op}" for op in ("acquire", "renew", "release", "get", "complete")),
    "/api/v1/namespaces",
    "/api/v1/scopes/fuzz-scope-0123456789abcdef0123456789abcdef/release",
    "/api/v1/scopes/fuzz-scope-0123456789abcdef0123456789abcdef/heartbeat",
    "/api/v1/verify-provenance",
]
ENVELOPED = ("/api/v1/lease", "/api/v1/namespaces", "/api/v1/scopes")

text = st.text(st.characters(codec=None), max_size=40)  # lone surrogates included
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | text
    | st.sampled_from([rid(), "own_" + "A" * 43, "ns_" + "b" * 43, "acquire", "wait"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
bodies = st.dictionaries(st.sampled_from(FIELDS) | text, values, max_size=6)
headers = st.fixed_dictionaries(
    {},
    optional={
        "Accept-Provenance": st.sampled_from(["eddsa-jcs-2022", "eddsa-rdfc-2022", "rsa", ""]),
        "Authorization": st.sampled_from(["Bearer tnr_nope", "Basic x", "Bearer"]),
        "Tenure-Namespace": st.sampled_from(["ns_" + "c" * 43, "ns_short", "x"]),
    },
)


huge = st.integers(min_value=2**53 - 2, max_value=2**200) | st.integers(max_value=-(2**63) + 2)


def nest(value: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


deep = st.builds(nest, values | huge, st.integers(min_value=20, max_value=1500), st.booleans())
hostile = st.dictionaries(
    st.sampled_from(FIELDS), deep | huge | values, min_size=1, max_size=4
) | st.builds(lambda body, index: body | {"data": {"ledger": {"logIndex": index}}}, bodies, huge)
GETS = [
    "/api/v1/log/entries?start={n}&end={n}",
    "/api/v1/log/proof/inclusion?index={n}&treeSize={n}",
    "/api/v1/log/proof/consistency?first={n}&second={n}",
    "/api/v1/log/bundle/{n}",
    "/api/v1/scopes/fuzz-scope-0123456789abcdef0123456789abcdef",
]


def check(response: httpx.Response, path: str) -> None:
    assert response.status_code < 500, (path, response.status_code, response.text[:500])
    document: Any = response.json()
    assert "data" in document and document["data"]["status"] in ("pass", "fail")
    if path.startswith(ENVELOPED):
        assert "_provenance" in document, path


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(PATHS), body=bodies, extra=headers)
def test_arbitrary_json_never_crashes_the_server(
    api: httpx.Client, path: str, body: dict[str, Any], extra: dict[str, str]
) -> None:
    raw = json.dumps(body)  # NaN and Infinity as their non-standard tokens, surrogates escaped
    check(api.post(path, content=raw, headers={"content-type": "application/json", **extra}), path)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(PATHS), raw=st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_server(api: httpx.Client, path: str, raw: bytes) -> None:
    check(api.post(path, content=raw), path)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(PATHS), body=hostile, extra=headers)
def test_deep_nesting_and_huge_numbers_never_crash_the_server(
    api: httpx.Client, path: str, body: dict[str, Any], extra: dict[str, str]
) -> None:
    raw = json.dumps(body)
    check(api.post(path, content=raw, headers={"content-type": "application/json", **extra}), path)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(GETS), number=huge | st.integers(min_value=-5, max_value=10**6))
def test_huge_numbers_in_queries_never_crash_the_server(
    api: httpx.Client, path: str, number: int
) -> None:
    response = api.get(path.format(n=number))
    assert response.status_code < 500, (path, number, response.status_code, response.text[:300])
