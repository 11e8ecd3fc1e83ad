"""The client's one error hierarchy: every failure is a :class:`TenureError`.

Refusals carry the server's reasons (and the signed answer that gave them); ``Unavailable`` is
an answer whose outcome is not known — never a success, and never a refusal either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.client.answers import Answer


class TenureError(Exception):
    """Root of every client error; ``answer`` is the server's signed answer, when there was one."""

    def __init__(self, message: str, answer: Answer | None = None) -> None:
        super().__init__(message)
        self.answer = answer

    @property
    def data(self) -> dict[str, Any]:
        return self.answer.data if self.answer is not None else {}


class InvalidRequest(TenureError):
    """The server refused the input (4xx): ``code`` and ``field`` say what and where."""

    def __init__(self, message: str, answer: Answer | None = None, status: int = 422) -> None:
        super().__init__(message, answer)
        error = self.data.get("error") or {}
        self.status = status
        self.code: str = str(error.get("code", "invalid_request"))
        self.field: str | None = error.get("field")


class RateLimited(TenureError):
    """429: too many requests for this tenant; try again after ``retry_after`` seconds."""

    def __init__(self, message: str, answer: Answer | None, retry_after: float) -> None:
        super().__init__(message, answer)
        self.retry_after = retry_after


class Unavailable(TenureError):
    """The outcome is unknown (503/500 ``status: unknown``, or no answer after every retry).

    Never permission: a lease acquire that ends here may or may not hold the resource."""


class MismatchedAnswer(Unavailable):
    """An answer for another resource or operation than the one asked (a broken or hostile
    server or proxy): never believed, never a lease; the request's outcome is unknown."""


class LeaseHeld(TenureError):
    """409 ``HELD``: someone else holds it. Retry after ``retry_after`` s (``backoff_ms`` is the
    server's jittered suggestion)."""

    def __init__(self, message: str, answer: Answer) -> None:
        super().__init__(message, answer)
        backoff = self.data.get("backoff") or {}
        self.held_by: list[str] = list(self.data.get("heldBy") or [])
        self.retry_after: int = int(self.data.get("retryAfterSeconds") or 1)
        self.backoff_ms: int = int(backoff.get("waitMs") or self.retry_after * 1000)
        self.same_holder_label: bool = bool(self.data.get("sameHolderLabel"))


class LeaseLost(TenureError):
    """The lease is no longer yours (409 ``LOST`` / ``NOT_ACTIVE``, or it expired before a
    renewal could be confirmed). Stop writing: your fencing token is stale."""


class Conflict(TenureError):
    """409 ``CONFLICT`` (capacity or fingerprint) or ``IDEMPOTENCY_CONFLICT`` (a requestId
    reused with other input)."""


class ReceiptInvalid(TenureError):
    """An answer's credential does not verify against the trusted keys; ``check`` names the
    failed check. The answer must not be believed."""

    def __init__(self, message: str, check: str) -> None:
        super().__init__(message)
        self.check = check
