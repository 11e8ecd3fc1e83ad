"""The pure lease state machine (DESIGN §2) under a fixed clock: one test per rule, then
hypothesis-driven random operation sequences checked against the invariants."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ledger.lease import leases
from ledger.lease.leases import AcquireArgs, EventKind, Outcome, Resource

DAY = 86_400_000
T0 = 1_800_000_000_000


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def args(holder: str, token: str, ttl: int = 30_000, **kw: object) -> AcquireArgs:
    return AcquireArgs(
        holder=holder, ttl_ms=ttl, lifecycle_ms=DAY, owner_digest=digest(token), **kw
    )  # type: ignore[arg-type]


def test_exclusive_grant_then_held_names_holder() -> None:
    res = Resource("t", "r")
    first = leases.acquire(res, args("a", "ta"), T0)
    second = leases.acquire(res, args("b", "tb"), T0 + 1)
    assert first.outcome is Outcome.GRANTED and first.lease is not None
    assert first.lease.fencing_token == 1
    assert second.outcome is Outcome.HELD and not second.events
    assert [lease.holder for lease in res.leases] == ["a"]


def test_fencing_increases_across_release_expiry_and_lifecycle() -> None:
    res = Resource("t", "r")
    tokens = []
    now = T0
    for step in range(4):
        decision = leases.acquire(res, args(f"h{step}", f"t{step}", ttl=1000), now)
        assert decision.lease is not None
        tokens.append(decision.lease.fencing_token)
        if step == 0:
            leases.release(res, digest("t0"), None, now)
        now += DAY if step == 2 else 2000  # expiry, then a whole lifecycle later
    assert tokens == [1, 2, 3, 4]


def test_reacquire_with_owner_token_renews_same_token() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", ttl=1000), T0)
    again = leases.acquire(res, args("a", "new", ttl=5000, presented_owner=digest("ta")), T0 + 500)
    assert again.outcome is Outcome.RENEWED
    assert again.lease is not None and again.lease.fencing_token == 1
    assert again.lease.expires_at == T0 + 5500


def test_same_holder_label_without_token_is_refused() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", capacity=3), T0)
    same = leases.acquire(res, args("a", "other", capacity=3), T0 + 1)
    assert same.outcome is Outcome.HELD and same.same_holder_label
    assert len(res.leases) == 1


def test_stale_owner_is_lost_and_never_touches_successor() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", ttl=1000), T0)
    leases.acquire(res, args("b", "tb", ttl=10_000), T0 + 2000)
    assert leases.renew(res, digest("ta"), None, 1000, T0 + 2001).outcome is Outcome.LOST
    assert leases.release(res, digest("ta"), None, T0 + 2001).outcome is Outcome.NOT_ACTIVE
    assert leases.complete(res, digest("ta"), None, {}, T0 + 2001).outcome is Outcome.LOST
    assert [lease.holder for lease in res.leases] == ["b"]


def test_wrong_fencing_token_is_lost() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta"), T0)
    assert leases.renew(res, digest("ta"), 7, 1000, T0).outcome is Outcome.LOST
    assert leases.release(res, digest("ta"), 7, T0).outcome is Outcome.LOST
    assert len(res.leases) == 1


def test_renew_is_capped_at_the_lifecycle_end() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", ttl=1000), T0)
    late = T0 + DAY - 10_000
    decision = leases.acquire(res, args("b", "tb", ttl=3_600_000), late)
    assert decision.lease is not None and decision.lease.expires_at == T0 + DAY
    renewed = leases.renew(res, digest("tb"), None, 3_600_000, late + 5000)
    assert renewed.lease is not None and renewed.lease.expires_at == T0 + DAY


def test_expiry_is_recorded_before_the_next_grant() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", ttl=1000), T0)
    decision = leases.acquire(res, args("b", "tb"), T0 + 1000)
    assert [event.kind for event in decision.events] == [EventKind.EXPIRE, EventKind.ACQUIRE]


def test_capacity_conflict_and_semaphore_limit() -> None:
    res = Resource("t", "r")
    for i in range(3):
        assert (
            leases.acquire(res, args(f"h{i}", f"t{i}", capacity=3), T0).outcome is Outcome.GRANTED
        )
    assert leases.acquire(res, args("x", "tx", capacity=3), T0).outcome is Outcome.HELD
    assert leases.acquire(res, args("y", "ty", capacity=4), T0).outcome is Outcome.CONFLICT
    assert [lease.fencing_token for lease in res.leases] == [1, 2, 3]


def test_complete_answers_result_for_same_fingerprint_and_conflict_for_other() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", fingerprint=b"f1"), T0)
    done = leases.complete(res, digest("ta"), 1, {"ok": True}, T0 + 5)
    assert done.outcome is Outcome.COMPLETED and not res.leases
    same = leases.acquire(res, args("b", "tb", fingerprint=b"f1"), T0 + 10)
    other = leases.acquire(res, args("b", "tb", fingerprint=b"f2"), T0 + 10)
    assert same.outcome is Outcome.COMPLETED and not same.events
    assert other.outcome is Outcome.CONFLICT
    fresh = leases.acquire(res, args("b", "tb", fingerprint=b"f2"), T0 + DAY)
    assert fresh.outcome is Outcome.GRANTED and fresh.lease is not None
    assert fresh.lease.fencing_token == 2


def test_fingerprint_binds_the_lifecycle() -> None:
    res = Resource("t", "r")
    leases.acquire(res, args("a", "ta", ttl=1000, fingerprint=b"f1"), T0)
    leases.release(res, digest("ta"), None, T0 + 1)
    assert leases.acquire(res, args("b", "tb", fingerprint=b"f2"), T0 + 2).outcome is (
        Outcome.CONFLICT
    )


# -- random operation sequences ----------------------------------------------------------


@dataclass
class Held:
    token: str
    fencing: int


@dataclass
class Model:
    granted: dict[str, list[int]] = field(default_factory=dict)
    owners: dict[str, list[Held]] = field(default_factory=dict)


class LeaseMachine(RuleBasedStateMachine):
    """Random ops on a few resources with a fixed clock moved by the test, never by sleeping."""

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.capacity = {"r0": 1, "r1": 1, "r2": 3}
        self.res = {name: Resource("t", name) for name in self.capacity}
        self.model = Model()
        self.counter = 0

    def _token(self) -> str:
        self.counter += 1
        return f"tok{self.counter}"

    @rule(
        name=st.sampled_from(["r0", "r1", "r2"]),
        holder=st.sampled_from("abcd"),
        ttl=st.integers(1, 5),
    )
    def acquire(self, name: str, holder: str, ttl: int) -> None:
        token = self._token()
        cap = self.capacity[name]
        decision = leases.acquire(
            self.res[name], args(holder, token, ttl * 1000, capacity=cap), self.now
        )
        if decision.outcome is Outcome.GRANTED:
            assert decision.lease is not None
            tokens = self.model.granted.setdefault(name, [])
            assert not tokens or decision.lease.fencing_token > tokens[-1]
            tokens.append(decision.lease.fencing_token)
            self.model.owners.setdefault(name, []).append(Held(token, decision.lease.fencing_token))

    @precondition(lambda self: any(self.model.owners.values()))
    @rule(data=st.data(), op=st.sampled_from(["renew", "release", "complete"]))
    def owner_op(self, data: st.DataObject, op: str) -> None:
        name = data.draw(st.sampled_from([n for n, h in self.model.owners.items() if h]))
        held = data.draw(st.sampled_from(self.model.owners[name]))
        res = self.res[name]
        live_before = any(
            lease.fencing_token == held.fencing and lease.expires_at > self.now
            for lease in res.leases
        )
        if op == "renew":
            decision = leases.renew(res, digest(held.token), None, 2000, self.now)
        elif op == "release":
            decision = leases.release(res, digest(held.token), None, self.now)
        else:
            decision = leases.complete(res, digest(held.token), None, {"n": 1}, self.now)
        succeeded = decision.outcome in (Outcome.RENEWED, Outcome.RELEASED, Outcome.COMPLETED)
        # A stale owner never succeeds; a live owner always does.
        assert succeeded == live_before
        if succeeded:
            assert decision.lease is not None and decision.lease.fencing_token == held.fencing

    @rule(ms=st.integers(0, 4000))
    def tick(self, ms: int) -> None:
        self.now += ms

    @invariant()
    def never_beyond_capacity(self) -> None:
        for name, res in self.res.items():
            live = leases.live(res, self.now)
            assert len(live) <= self.capacity[name]
            assert len({lease.fencing_token for lease in res.leases}) == len(res.leases)


LeaseMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
TestLeaseMachine = LeaseMachine.TestCase
