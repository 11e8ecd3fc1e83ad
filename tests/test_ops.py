"""The per-op rules of a lease call live in ledger/lease/ops.py, with one source of limits."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from api.schemas import OPS, OpName
from ledger.lease.calls import LeaseCall, Limits
from ledger.lease.ops import CallRefused, Op, check_call


def test_the_schema_and_the_path_name_exactly_the_ops() -> None:
    assert set(get_args(OpName)) == set(Op) == set(OPS)


@pytest.mark.parametrize(
    ("op", "fields", "given", "code", "field"),
    [
        ("renew", {}, False, "missing", "ownerToken"),
        ("complete", {}, False, "missing", "ownerToken"),
        ("acquire", {"holder": "w", "ttl_seconds": 61}, False, "out_of_range", "ttlSeconds"),
        ("get", {"wait_seconds": 5}, False, "invalid_value", "waitSeconds"),
        ("release", {"owner_token": "o"}, True, "invalid_value", "result"),
        ("complete", {"owner_token": "o", "result": "x" * 20}, True, "too_large", "result"),
        ("complete", {"owner_token": "o", "result": 2**60}, True, "invalid_value", "result"),
    ],
)
def test_a_call_breaking_a_rule_is_refused_naming_the_field(
    op: str, fields: dict[str, Any], given: bool, code: str, field: str
) -> None:
    limits = Limits(ttl_max_seconds=60, result_max_bytes=16)
    with pytest.raises(CallRefused) as refused:
        check_call(LeaseCall(op, "t", "r", **fields), limits, given)
    assert (refused.value.code, refused.value.field) == (code, field)


def test_calls_within_the_rules_pass() -> None:
    limits = Limits(ttl_max_seconds=60, result_max_bytes=16)
    check_call(LeaseCall("acquire", "t", "r", holder="w", ttl_seconds=60), limits, False)
    check_call(LeaseCall("wait", "t", "r", holder="w", wait_seconds=5), limits, False)
    check_call(LeaseCall("complete", "t", "r", owner_token="o", result=[1]), limits, True)
    check_call(LeaseCall("get", "t", "r"), limits, False)
