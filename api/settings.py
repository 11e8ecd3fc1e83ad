"""Server settings: flags of `tenure serve`, or TENURE_* environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from api.accel import parse_accel
from verify.defaults import DEFAULT_LIFECYCLE_SECONDS, TTL_CEILING_SECONDS


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TENURE_")

    data_dir: Path = Path("data")
    database: str | None = None
    """A ``postgresql://`` URL (``TENURE_DATABASE``): the ledger lives there, not in data_dir."""
    keys_dir: Path = Path("keys")
    origin: str | None = None
    host_name: str | None = Field(default=None, pattern=r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
    """The log's public host name (``TENURE_HOST_NAME``): a new log's default origin is
    ``<host_name>/log/<id>``; a log keeps the origin of its stored checkpoints."""
    require_api_key: bool = False
    allow_anonymous: bool = True
    rate_limit: float = Field(default=10_000.0, gt=0)
    ttl_max_seconds: int = Field(default=3600, ge=1, le=TTL_CEILING_SECONDS)
    lifecycle_seconds: int = Field(default=DEFAULT_LIFECYCLE_SECONDS, ge=1)
    sweep_interval: float = Field(default=0.1, gt=0)
    checkpoint_interval: float = Field(default=10.0, gt=0)
    key_watch_interval: float = Field(default=1.0, gt=0)
    body_max_bytes: int = 16 * 1024
    complete_body_max_bytes: int = 40 * 1024
    verify_body_max_bytes: int = 1024 * 1024
    verify_concurrency: int = Field(default=2, ge=1)
    verify_budget_seconds: float = Field(default=2.0, gt=0)
    watch_max: int = Field(default=8, ge=1)
    """Watches (``GET /api/v1/watch``) one tenant may hold open on one server process."""
    watch_idle_seconds: float = Field(default=300.0, gt=0)
    watch_heartbeat_seconds: float = Field(default=15.0, gt=0)
    watch_budget_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    watch_send_seconds: float = Field(default=10.0, gt=0)
    """How long a reader may keep one event unread before it is cut off."""
    watch_replay_max: int = Field(default=100_000, ge=1)
    watch_poll_seconds: float = Field(default=0.2, gt=0)
    access_log: bool = False
    """One line per request on stdout (``tenure serve`` at ``--log-level info`` or lower)."""
    witnesses: list[str] = []
    """``URL=VKEY`` of each witness the checkpoints are pushed to (``--witness``)."""
    accel: str = "all"
    """The accelerations on (``TENURE_ACCEL``): ``all``, ``none`` or a comma-separated list of
    ``api.accel.ACCELERATIONS``; each writes the same bytes as the reference path."""

    @field_validator("witnesses")
    @classmethod
    def _witness_targets(cls, value: list[str]) -> list[str]:
        from api.witness_push import parse_target

        for text in value:
            parse_target(text)
        return value

    @field_validator("accel")
    @classmethod
    def _known_accelerations(cls, value: str) -> str:
        parse_accel(value)
        return value
