"""Where a ledger lives: a SQLite folder or a PostgreSQL URL, and the log's default origin."""

from urllib.parse import urlsplit, urlunsplit


def is_database_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite folder."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """A database ``url`` without its password: what messages and logs may show."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


HOST_NAME_VARIABLE = "TENURE_HOST_NAME"
"""The log's public host name, if the operator configured one: the default origin's prefix."""


def default_origin(log_id: str, host_name: str | None = None) -> str:
    """The checkpoint origin (and note key name) when the operator names none: unique per log,
    under the log's configured host name (C2SP tlog-checkpoint: a schema-less URL)."""
    return f"{host_name or 'tenure.local'}/log/{log_id}"
