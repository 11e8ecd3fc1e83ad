"""The lease operations (DESIGN §3.2) and the per-op rules of a call that no schema expresses.

Any front (HTTP, MCP, a CLI) builds a :class:`~ledger.lease.calls.LeaseCall` and runs
:func:`check_call` before handing it to the service; a :class:`CallRefused` names the field and
the rule, and the front maps it to its own refusal (the HTTP edge: 413 for ``too_large``, else 422).
"""

from __future__ import annotations

from enum import StrEnum

from ledger.lease.calls import LeaseCall, Limits
from verify.errors import VerificationError
from verify.jcs import canonicalize


class Op(StrEnum):
    ACQUIRE = "acquire"
    RENEW = "renew"
    RELEASE = "release"
    GET = "get"
    WAIT = "wait"
    COMPLETE = "complete"


ACQUIRING = frozenset({Op.ACQUIRE, Op.WAIT})
"""Ops that ask for a slot: they may wait, and mint an owner token (and, for a caller that
names no holder, the label derived from it: ``ledger.lease.tokens.default_holder``)."""
OWNED = frozenset({Op.RENEW, Op.RELEASE, Op.COMPLETE})
"""Ops on a held lease: they need its owner token."""


def may_wait(call: LeaseCall) -> bool:
    """Whether ``call`` may wait for its grant (rule 9): ``wait``, or an acquire that names
    ``waitSeconds``. The service answers any other call once its batch is decided."""
    return call.op in ACQUIRING and (call.op == Op.WAIT or call.wait_seconds is not None)


class CallRefused(ValueError):
    """A lease call that breaks a per-op rule: ``code`` and ``field`` in tenure's words."""

    def __init__(self, code: str, message: str, field: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


def check_call(call: LeaseCall, limits: Limits, result_given: bool) -> None:
    """The rules of DESIGN §3.2 per op; ``result_given`` says the caller sent ``result`` at all."""
    op = Op(call.op)
    if op in OWNED and call.owner_token is None:
        raise CallRefused("missing", f"ownerToken is required for {op}", "ownerToken")
    if call.ttl_seconds > limits.ttl_max_seconds:
        message = f"ttlSeconds must be an integer 1..{limits.ttl_max_seconds}"
        raise CallRefused("out_of_range", message, "ttlSeconds")
    if call.wait_seconds is not None and op not in ACQUIRING:
        raise CallRefused("invalid_value", "waitSeconds applies to acquire and wait", "waitSeconds")
    if op is Op.COMPLETE and not result_given:
        raise CallRefused("missing", "result is required for complete", "result")
    if result_given and op is not Op.COMPLETE:
        raise CallRefused("invalid_value", "result applies to complete only", "result")
    if op is Op.COMPLETE and len(_canonical_result(call.result)) > limits.result_max_bytes:
        kib = limits.result_max_bytes // 1024
        raise CallRefused("too_large", f"result exceeds {kib} KiB of canonical JSON", "result")


def _canonical_result(result: object) -> bytes:
    try:
        return canonicalize(result)
    except VerificationError as error:
        message = "result must be I-JSON: no NaN or Infinity, integers within ±(2**53 - 1)"
        raise CallRefused("invalid_value", f"{message} ({error})", "result") from error
