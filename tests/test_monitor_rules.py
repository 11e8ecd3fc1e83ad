"""verify.monitor and verify.cosignature as pure functions, over hand-made logs signed with a test
key (tests/test_audit.py's `Ledger`) and proofs from a naive RFC 9162 reference: the monitor's
findings match `tenure audit`'s, a restart from the saved state resumes exactly (a violation that
spans the restart is still found), and each forged answer is refused with its check's name."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.log.checkpoint import checkpoint_body, sign_note
from tests.test_audit import ORIGIN, Ledger, clean, over_capacity, repeated_token
from verify.audit import audit
from verify.cosignature import cosign, cosignature_key_id, signed_message, verify_cosignature
from verify.errors import MalformedInput, SignatureError
from verify.monitor import Finding, Monitor, MonitorState, Violation
from verify.multikey import did_key
from verify.note import key_id, verify_note
from verify.rfc9162 import leaf_hash, node_hash


def mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1, recursively (the naive reference)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """RFC 9162 §2.1.4.1 SUBPROOF, recursively."""
    if m == len(leaves):
        return [] if whole else [mth(leaves)]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m <= k:
        return [*subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def state_of(ledger: Ledger) -> MonitorState:
    return MonitorState([did_key(ledger.key.public_key())])


def restart(state: MonitorState) -> MonitorState:
    """What a new process reads back from the state file."""
    return MonitorState.from_data(json.loads(json.dumps(state.as_data())))


def follow(state: MonitorState, ledger: Ledger, size: int, page: int = 2) -> list[Finding]:
    """One monitor round against the hand-made log at ``size``, as api/monitor.py drives it."""
    leaves = ledger.leaves()
    monitor = Monitor(state)
    new = monitor.checkpoint(ledger.checkpoint(leaves, size))
    if state.seen is not None and monitor.needs_consistency(new):
        proof = subproof(state.seen.size, leaves[:size], True)
        monitor.consistency(new, {"hashes": [b64(h) for h in proof]})
    while monitor.size < size:
        start = monitor.size
        items = [
            {"index": i, "leaf": b64(leaves[i])} for i in range(start, min(start + page, size))
        ]
        monitor.entries(new, {"entries": items})
    return monitor.seal(new)


def test_rounds_and_restarts_find_what_the_audit_finds() -> None:
    for ledger in (clean(), repeated_token(), over_capacity()):
        size = len(ledger.entries)
        state, found = state_of(ledger), []
        for step in (1, size // 2, size):  # each round from a restarted process
            state = restart(state)
            found += follow(state, ledger, step)
        expected = audit(ledger.records(), [did_key(ledger.key.public_key())]).violations
        assert [(f.index, f.check) for f in found] == [(v.index, v.check) for v in expected]
        assert state.findings == len(found)
        whole = state_of(ledger)
        follow(whole, ledger, size, page=1000)
        assert restart(state).as_data() == whole.as_data()  # resumed exactly


def test_a_violation_spanning_a_restart_is_found() -> None:
    ledger = over_capacity()  # the second grant finds the first one live
    state = state_of(ledger)
    assert follow(state, ledger, 1) == []
    assert [(f.index, f.check) for f in follow(restart(state), ledger, 2)] == [(1, "capacity")]


def refused(state: MonitorState, served: dict[str, Any]) -> Finding:
    with pytest.raises(Violation) as caught:
        Monitor(state).checkpoint(served)
    return caught.value.finding


def test_forged_checkpoints_are_refused_with_evidence() -> None:
    ledger = clean()
    state = state_of(ledger)
    follow(state, ledger, 5)
    other = Ledger(key=ledger.key).add("acquire", 1, 0, 10)
    for _ in range(5):
        other.add("acquire", 1, 0, 10, resource="x" * 64)
    fork = refused(state, other.checkpoint(other.leaves(), 5))  # same size, other root
    assert fork.check == "split-view" and fork.evidence is not None
    assert state.seen is not None and fork.evidence["seen"]["note"] == state.seen.note
    verify_note(fork.evidence["served"]["note"], ORIGIN, ledger.key.public_key().public_bytes_raw())
    assert refused(state, ledger.checkpoint(ledger.leaves(), 3)).check == "rollback"
    stranger = Ledger(entries=ledger.entries)  # signed by a key no one trusts
    assert refused(state, stranger.checkpoint(ledger.leaves(), 6)).check == "checkpoint-signature"
    served = ledger.checkpoint(ledger.leaves(), 6) | {"treeSize": 7}
    assert refused(state, served).check == "checkpoint-record"
    moved = sign_note(
        checkpoint_body("elsewhere", 6, mth(ledger.leaves()[:6])), "elsewhere", ledger.key
    )
    assert refused(state, {"note": moved}).check == "checkpoint-origin"


def test_an_inconsistent_proof_or_rewritten_entry_is_refused() -> None:
    ledger = clean()
    state = state_of(ledger)
    follow(state, ledger, 3)
    leaves = ledger.leaves()
    monitor = Monitor(state)
    new = monitor.checkpoint(ledger.checkpoint(leaves, 8))
    proof = [b64(h) for h in subproof(3, leaves, True)]
    with pytest.raises(Violation) as caught:
        monitor.consistency(new, {"hashes": [b64(bytes(32)), *proof[1:]]})
    assert caught.value.finding.check == "split-view"
    assert caught.value.finding.evidence is not None and "proof" in caught.value.finding.evidence
    monitor.consistency(new, {"hashes": proof})
    items = [{"index": i, "leaf": b64(leaves[i])} for i in range(3, 8)]
    items[2]["leaf"] = b64(leaves[5].replace(b'"kind":"acquire"', b'"kind":"release"'))
    monitor.entries(new, {"entries": items})
    with pytest.raises(Violation) as caught:
        monitor.seal(new)
    assert caught.value.finding.check == "entries-root"
    assert state.seen is not None and state.seen.size == 3  # the state did not advance


def test_out_of_protocol_answers_and_state_files_are_malformed() -> None:
    ledger = clean()
    state = state_of(ledger)
    monitor = Monitor(state)
    new = monitor.checkpoint(ledger.checkpoint(ledger.leaves(), 2))
    with pytest.raises(MalformedInput):
        monitor.entries(new, {"entries": [{"index": 1, "leaf": b64(ledger.leaves()[1])}]})
    with pytest.raises(MalformedInput):
        monitor.entries(new, {"entries": []})
    follow(state, ledger, 3)
    data = state.as_data()
    for broken in ({**data, "frontier": data["frontier"][:1]}, {**data, "version": 1}, []):
        with pytest.raises(MalformedInput):
            MonitorState.from_data(broken)


def test_cosignature_v1() -> None:
    log_key, witness = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    body = checkpoint_body(ORIGIN, 20852163, bytes(32))
    note = sign_note(body, ORIGIN, log_key)
    public = witness.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert signed_message(body, 1679315147) == b"cosignature/v1\ntime 1679315147\n" + body.encode()
    assert cosignature_key_id("w1", public) != key_id("w1", public)  # type 0x04, not 0x01
    cosigned = cosign(note, "w1", witness, 1679315147)
    assert verify_cosignature(cosigned, "w1", public) == 1679315147
    verify_note(cosigned, ORIGIN, log_key.public_key().public_bytes_raw())  # the log's holds
    with pytest.raises(SignatureError):
        verify_cosignature(note, "w1", public)  # no cosignature line
    with pytest.raises(SignatureError):
        verify_cosignature(cosigned.replace("20852163", "20852164"), "w1", public)
    line = cosigned.splitlines()[-1]
    blob = base64.b64decode(line.split(" ")[-1])
    later = blob[:4] + (1679315148).to_bytes(8, "big") + blob[12:]  # another timestamp
    forged = cosigned.replace(line.split(" ")[-1], b64(later))
    with pytest.raises(SignatureError):
        verify_cosignature(forged, "w1", public)
