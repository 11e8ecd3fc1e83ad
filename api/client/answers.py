"""Typed answers: the server's ``data`` and its signed credential, with named accessors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.receipt import SECRET_DATA_FIELDS


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer: ``data`` as the server sent it (secrets included) and ``provenance``, the
    W3C credential over it."""

    data: dict[str, Any]
    provenance: dict[str, Any] | None
    status_code: int

    @property
    def status(self) -> str:
        """``pass``, ``fail`` or ``unknown``."""
        return str(self.data.get("status", "unknown"))

    @property
    def receipt(self) -> dict[str, Any]:
        """The answer as a receipt to save or hand to ``verify-provenance``: the secrets it gave
        you (ownerToken, namespace) removed, which the credential never covered anyway."""
        data = {k: v for k, v in self.data.items() if k not in SECRET_DATA_FIELDS}
        return {"data": data, "_provenance": self.provenance}

    @property
    def ledger(self) -> dict[str, Any]:
        return dict(self.data.get("ledger") or {})


@dataclass(frozen=True, slots=True)
class LeaseAnswer(Answer):
    """A lease operation's answer (docs/api.md, "Lease operations")."""

    @property
    def outcome(self) -> str:
        return str(self.data.get("outcome", ""))

    @property
    def granted(self) -> bool:
        return bool(self.data.get("granted"))

    @property
    def resource(self) -> str:
        return str(self.data.get("resource", ""))

    @property
    def fencing_token(self) -> int | None:
        token = self.data.get("fencingToken")
        return int(token) if token is not None else None

    @property
    def owner_token(self) -> str | None:
        """Shown once on a fresh grant; keep it secret."""
        token = self.data.get("ownerToken")
        return str(token) if token is not None else None

    @property
    def expires_at(self) -> str | None:
        return self.data.get("expiresAt")

    @property
    def lease_id(self) -> str | None:
        return self.data.get("leaseId")

    @property
    def holders(self) -> list[dict[str, Any]]:
        return list(self.data.get("holders") or [])

    @property
    def result(self) -> Any:
        return self.data.get("result")

    @property
    def replayed(self) -> bool:
        return bool(self.data.get("replayed"))


@dataclass(frozen=True, slots=True)
class ScopeAnswer(Answer):
    """A scope's resume packet, release or heartbeat."""

    @property
    def leases(self) -> list[dict[str, Any]]:
        return list(self.data.get("leases") or [])

    @property
    def released_ids(self) -> list[str]:
        return list(self.data.get("releasedIds") or [])

    @property
    def renewed(self) -> list[dict[str, Any]]:
        """A heartbeat with ``renew``: each renewed lease with its new ``expiresAt``."""
        return list(self.data.get("renewed") or [])


@dataclass(frozen=True, slots=True)
class NamespaceAnswer(Answer):
    """A freshly minted namespace: a secret whose hash names a new tenant."""

    @property
    def namespace(self) -> str:
        return str(self.data["namespace"])
