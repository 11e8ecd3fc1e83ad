"""The client's sans-IO core and lease keeper, with a fixed clock: no sockets, no sleeps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.client import (
    LeaseAnswer,
    LeaseHeld,
    LeaseLost,
    MismatchedAnswer,
    ReceiptInvalid,
    RetryPolicy,
    Unavailable,
)
from api.client.core import Core, NetworkError, Reply, Request, Sleep
from api.client.keeper import Keeper


def reply(status: int, data: dict[str, Any], **headers: str) -> Reply:
    return Reply(status, headers, json.dumps({"data": data, "_provenance": None}).encode())


def drive(
    core: Core,
    steps: list[Reply | NetworkError],
    deadline: float | None = None,
    sent: list[Request] | None = None,
) -> Any:
    """Run one acquire flow against scripted replies; returns (answer, requests, sleeps)."""
    now = [0.0]
    flow = core.flow(
        core.lease("acquire", resource="r", holder="w"), lambda: now[0], lambda: 1.0, deadline
    )
    sent = [] if sent is None else sent
    sleeps: list[float] = []
    try:
        step = next(flow)
        while True:
            if isinstance(step, Sleep):
                sleeps.append(step.seconds)
                now[0] += step.seconds
                step = flow.send(None)
                continue
            sent.append(step)
            outcome = steps[len(sent) - 1]
            step = flow.throw(outcome) if isinstance(outcome, NetworkError) else flow.send(outcome)
    except StopIteration as stop:
        return stop.value, sent, sleeps


ASKED = {"op": "acquire", "resource": "r"}  # what drive() asks
GRANTED = {
    "status": "pass",
    **ASKED,
    "outcome": "GRANTED",
    "fencingToken": 3,
    "ownerToken": "own_x",
}
UNKNOWN = {"status": "unknown", "error": {"code": "storage_unavailable", "message": "disk"}}


def test_no_answer_and_unknown_are_retried_with_the_same_request() -> None:
    core = Core(None, 5.0, RetryPolicy(attempts=4, base=0.1, cap=1.0), verify=False)
    steps = [NetworkError("reset"), reply(503, UNKNOWN), reply(201, GRANTED)]
    answer, sent, sleeps = drive(core, steps)
    assert isinstance(answer, LeaseAnswer) and answer.fencing_token == 3
    assert len({request.body for request in sent}) == 1  # same requestId every time
    assert sleeps == [0.1, 0.2]  # exponential (jitter pinned at 1.0)


def test_unknown_is_never_success() -> None:
    core = Core(None, 5.0, RetryPolicy(attempts=3), verify=False)
    with pytest.raises(Unavailable):
        drive(core, [reply(503, UNKNOWN)] * 3)
    with pytest.raises(Unavailable):
        drive(core, [reply(200, {**GRANTED, "status": "unknown"})] * 3)


def test_retries_stop_at_the_deadline() -> None:
    core = Core(None, 5.0, RetryPolicy(attempts=10, base=1.0, cap=1.0), verify=False)
    sent: list[Request] = []
    with pytest.raises(Unavailable):
        drive(core, [NetworkError("down")] * 10, deadline=2.5, sent=sent)
    assert len(sent) == 3  # at 0, 1 and 2 s; a fourth would start past the deadline
    assert sent[-1].timeout == pytest.approx(0.5)  # and may not outlast it


def test_refusals_carry_the_servers_reasons() -> None:
    held = {"status": "fail", **ASKED, "outcome": "HELD", "heldBy": ["w1"], "retryAfterSeconds": 4}
    core = Core(None, 5.0, RetryPolicy(), verify=False)
    with pytest.raises(LeaseHeld) as refused:
        drive(core, [reply(409, held | {"backoff": {"waitMs": 4300}})])
    assert (refused.value.held_by, refused.value.retry_after) == (["w1"], 4)
    assert refused.value.backoff_ms == 4300
    with pytest.raises(LeaseLost):
        drive(core, [reply(409, {"status": "fail", **ASKED, "outcome": "LOST"})])


def test_keeper_renews_at_a_third_of_the_ttl_and_loses_at_expiry() -> None:
    keeper = Keeper.granted(9.0, sent_at=100.0)
    assert keeper.delay(100.2) == pytest.approx(2.8)
    assert keeper.failed(Unavailable("503"), 104.0) is None  # still valid until 109
    assert keeper.delay(104.0) == pytest.approx(0.75)  # retry every ttl/12 meanwhile
    assert keeper.renewed(104.5, now=104.6) is None
    assert keeper.valid_until == 113.5 and keeper.delay(104.5) == pytest.approx(3.0)
    lost = keeper.failed(Unavailable("503"), 113.5)
    assert isinstance(lost, LeaseLost) and keeper.lost is lost


def test_a_late_answer_counts_from_when_the_request_was_sent() -> None:
    """Sent at 0, answered 2.5 s later, ttl 3: the server's lease ends by 3 at the latest, so
    the lease is lost here at 3 — not 2.25 s after another holder could have taken it."""
    keeper = Keeper.granted(3.0, sent_at=0.0)
    assert keeper.valid_until == 3.0
    assert keeper.delay(2.5) == 0.0  # due at once (a Lease confirms it before handing it out)
    assert not keeper.expired(2.99) and keeper.expired(3.0)
    assert keeper.failed(Unavailable("slow"), 2.9) is None
    assert keeper.delay(2.9) == pytest.approx(0.1)  # the next try is at the expiry, not later
    assert isinstance(keeper.failed(Unavailable("slow"), 3.0), LeaseLost)


def test_a_renewal_confirmed_after_the_local_expiry_does_not_revive_the_lease() -> None:
    keeper = Keeper.granted(3.0, sent_at=0.0)
    lost = keeper.renewed(2.5, now=3.2)  # sent in time, confirmed too late
    assert isinstance(lost, LeaseLost) and keeper.expired(3.2)
    assert keeper.valid_until == 3.0


@pytest.mark.parametrize(
    ("status", "data"),
    [
        (201, {**GRANTED, "resource": "other"}),  # another resource's grant
        (200, {**GRANTED, "op": "get", "outcome": "HOLDING"}),  # another operation's answer
        (409, {"status": "fail", "op": "acquire", "outcome": "LOST"}),  # no resource at all
    ],
)
def test_an_answer_for_another_request_is_never_believed(status: int, data: Any) -> None:
    core = Core(None, 5.0, RetryPolicy(attempts=2), verify=False)
    with pytest.raises(Unavailable) as unknown:
        drive(core, [reply(status, data)] * 2)
    assert isinstance(unknown.value.__cause__, MismatchedAnswer)
    assert "not believed" in str(unknown.value)


def test_without_trust_the_served_keyring_is_pinned_first() -> None:
    core = Core(None, 5.0, RetryPolicy(attempts=1))
    stranger = {"keys": [{"did": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}]}
    sent: list[Request] = []
    with pytest.raises(ReceiptInvalid):  # our scripted answer is unsigned
        drive(core, [Reply(200, {}, json.dumps(stranger).encode()), reply(201, GRANTED)], sent=sent)
    assert [(request.method, request.path) for request in sent] == [
        ("GET", "/api/v1/keys"),
        ("POST", "/api/v1/lease/acquire"),
    ]
    assert core.trusted == {stranger["keys"][0]["did"]}
