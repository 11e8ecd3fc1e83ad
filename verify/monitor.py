"""A continuous log monitor's checks (DESIGN §6, as CT monitors and witnesses do), pure.

The monitor remembers the last checkpoint it verified and the compact range of the entries under
it. For each newer checkpoint a log serves it checks, in order:

* **checkpoint-signature**: the C2SP signed note verifies under a trusted key named after its
  origin; **checkpoint-origin**: the origin is the one seen before; **checkpoint-record**: the
  JSON's ``treeSize``/``rootHash`` are the note's;
* **rollback**: the tree is not smaller than the one seen; **split-view**: a tree of the same size
  has the same root, and a larger one is consistent with it (RFC 9162 §2.1.4.2). Both signed
  checkpoints are the evidence: two notes under one key that no append-only log can sign both;
* **entries-root**: the new entries, appended to the compact range, hash to the signed root
  (a log that serves entries other than those it signed, a rewritten entry);
* the lease rules of ``verify.invariants`` over each new entry, and its v1 format
  (``verify.export_records.event_of``), exactly as ``tenure audit`` replays them.

The first four are fatal: the state does not advance past a checkpoint that fails them. Lease
findings are not: the log did sign that history, so the checkpoint is sealed and the findings are
reported (the first ``MAX_FINDINGS`` of a round, then how many more). :class:`MonitorState`
round-trips through JSON, so a restarted monitor resumes exactly; it holds the live leases and
the ``DORMANT_KEPT`` most recently ended resources' fencing tokens, not every resource ever seen.
What it remembers and reports is ``verify/monitor_state.py``. Pure: no sockets, files or
clock; ``api/monitor.py`` does the I/O.
"""

from __future__ import annotations

import base64
from typing import Any

from verify.errors import MalformedInput, ProofError, SignatureError, b64
from verify.export_records import event_of
from verify.invariants import Rules
from verify.monitor_state import (
    Finding,
    MonitorState,
    Seen,
    Violation,
    b64_field,
    ignore_warning,
    proof_hashes,
    seen_of,
)
from verify.multikey import public_key_from_did
from verify.note import verify_note
from verify.rfc9162 import EMPTY_ROOT, leaf_hash, node_hash, verify_consistency

__all__ = ["Monitor"]

MAX_FINDINGS = 1000
"""Lease findings a round lists; a hostile log cannot grow the monitor's memory with them."""
DORMANT_KEPT = 10_000
"""Ended resources whose highest fencing token the state keeps (the most recently ended)."""


class Monitor:
    """Advance a :class:`MonitorState` one checkpoint at a time; see the module docstring.

    For each new checkpoint: ``checkpoint``; if ``needs_consistency``, ``consistency``; then
    ``entries`` page by page up to its size; then ``seal``. Lease findings collect in ``found``.
    """

    def __init__(self, state: MonitorState) -> None:
        if not state.trusted:
            raise MalformedInput("a monitor needs at least one trusted key")
        self.state = state
        self.keys = [(did, public_key_from_did(did).public_bytes_raw()) for did in state.trusted]
        self.frontier = list(state.frontier)
        self.size = 0 if state.seen is None else state.seen.size
        self.rules = Rules(self._flag, ignore_warning)
        self.rules.restore(state.rules)
        self.found: list[Finding] = []
        self.omitted = 0
        """Findings past ``MAX_FINDINGS`` this round: counted, not kept."""

    def checkpoint(self, data: Any) -> Seen:
        """Verify a served checkpoint against the trusted keys and the one seen before."""
        new = seen_of(data)
        self._check_record(data, new)
        self._check_signature(new)
        seen = self.state.seen
        if seen is None:
            return new
        evidence = {"seen": seen.as_data(), "served": new.as_data()}
        if new.origin != seen.origin:
            raise Violation(
                Finding("checkpoint-origin", f"origin {new.origin!r}, seen {seen.origin!r}")
            )
        if new.size < seen.size:
            message = f"served tree size {new.size} after signing size {seen.size}"
            raise Violation(Finding("rollback", message, None, evidence))
        if new.size == seen.size and new.root != seen.root:
            message = f"two roots signed for tree size {new.size}"
            raise Violation(Finding("split-view", message, None, evidence))
        return new

    def needs_consistency(self, new: Seen) -> bool:
        seen = self.state.seen
        return seen is not None and 0 < seen.size < new.size

    def consistency(self, new: Seen, data: Any) -> None:
        """Check a ``GET /log/proof/consistency`` answer from the seen tree to ``new``."""
        seen = self.state.seen
        assert seen is not None
        proof = proof_hashes(data)
        hashes = data["hashes"]
        try:
            verify_consistency(seen.size, new.size, seen.root, new.root, proof)
        except (ProofError, MalformedInput) as e:
            message = f"tree {new.size} is not an extension of the tree {seen.size} seen: {e}"
            evidence = {"seen": seen.as_data(), "served": new.as_data(), "proof": hashes}
            raise Violation(Finding("split-view", message, None, evidence)) from e

    def entries(self, new: Seen, data: Any) -> int:
        """Feed a ``GET /log/entries`` page starting at the next index; return the next one."""
        page = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(page, list) or not page:
            raise MalformedInput(f"the entries page from {self.size} is empty or not a list")
        for item in page:
            index = item.get("index") if isinstance(item, dict) else None
            if index != self.size or index >= new.size or not isinstance(item.get("leaf"), str):
                raise MalformedInput(f"expected entry {self.size} of {new.size}, got {index!r}")
            leaf = b64_field(item["leaf"], f"entry {index} leaf")
            self._append(leaf_hash(leaf))
            event = event_of(index, leaf, self._flag)
            if event is not None:
                self.rules.apply(event)
        return self.size

    def seal(self, new: Seen) -> list[Finding]:
        """Check the entries hash to ``new``'s root; then remember it. Return the findings."""
        if self.size != new.size:
            raise MalformedInput(f"sealing tree {new.size} with {self.size} entries fed")
        computed = _range_root(self.frontier)
        if computed != new.root:
            first = 0 if self.state.seen is None else self.state.seen.size
            message = (
                f"entries [{first}, {new.size}) hash to {b64(computed)}, "
                f"the signed root is {b64(new.root)}: the log serves entries it did not sign"
            )
            raise Violation(Finding("entries-root", message, None, {"served": new.as_data()}))
        state = self.state
        state.seen, state.frontier = new, list(self.frontier)
        self.rules.forget_ended(DORMANT_KEPT)
        state.rules = self.rules.state_data()
        state.findings += len(self.found) + self.omitted
        found, self.found = self.found, []
        if self.omitted:
            message = f"{self.omitted} more findings in this round are not listed"
            found.append(Finding("findings-omitted", message))
            self.omitted = 0
        return found

    def _check_record(self, data: dict[str, Any], new: Seen) -> None:
        size, root = data.get("treeSize", new.size), data.get("rootHash")
        if size != new.size or (root is not None and root != base64.b64encode(new.root).decode()):
            message = "the answer's treeSize/rootHash are not the signed note's"
            raise Violation(Finding("checkpoint-record", message, None, {"served": data}))

    def _check_signature(self, new: Seen) -> None:
        for _did, public in self.keys:
            try:
                verify_note(new.note, new.origin, public)
                return
            except (SignatureError, MalformedInput):
                continue
        message = f"no trusted key verifies the note of tree {new.size} as {new.origin!r}"
        raise Violation(Finding("checkpoint-signature", message, None, {"served": new.as_data()}))

    def _append(self, leaf: bytes) -> None:
        h, idx, hashes = leaf, self.size, self.frontier
        while idx & 1:  # each trailing 1-bit closes a perfect subtree (§2.1.1)
            h = node_hash(hashes.pop(), h)
            idx >>= 1
        hashes.append(h)
        self.size += 1

    def _flag(self, index: int | None, check: str, message: str) -> None:
        if len(self.found) < MAX_FINDINGS:
            self.found.append(Finding(check, message, index))
        else:
            self.omitted += 1


def _range_root(hashes: list[bytes]) -> bytes:
    if not hashes:
        return EMPTY_ROOT
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc
