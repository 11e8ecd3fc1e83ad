"""The tenure client: ``from api.client import Client, AsyncClient``.

Needs the base install plus httpx only (``pip install 'tenure[client]'``): no FastAPI, no
pydantic, no SQLite. The full guide is docs/client.md.
"""

from api.client.aio import AsyncClient, AsyncLease
from api.client.answers import Answer, LeaseAnswer, NamespaceAnswer, ScopeAnswer
from api.client.core import RetryPolicy
from api.client.election import Election, Leader
from api.client.errors import (
    Conflict,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    MismatchedAnswer,
    RateLimited,
    ReceiptInvalid,
    TenureError,
    Unavailable,
)
from api.client.held import Lease
from api.client.sync import Client

__all__ = [
    "Answer",
    "AsyncClient",
    "AsyncLease",
    "Client",
    "Conflict",
    "Election",
    "InvalidRequest",
    "Leader",
    "Lease",
    "LeaseAnswer",
    "LeaseHeld",
    "LeaseLost",
    "MismatchedAnswer",
    "NamespaceAnswer",
    "RateLimited",
    "ReceiptInvalid",
    "RetryPolicy",
    "ScopeAnswer",
    "TenureError",
    "Unavailable",
]
