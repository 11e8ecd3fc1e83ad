"""Values several parts of tenure state, each written once (DESIGN §2–3, docs/api.md).

Plain constants with no imports, so the client, the CLIs and the server all read them here."""

from __future__ import annotations

VERSION = "0.1.0"
"""tenure's version: the engine answers and receipts name, the OpenAPI's and the MCP server's."""
ENGINE = f"tenure/{VERSION}"
"""The engine an answer's ``versions`` and a receipt's ``claimGenerator`` name."""
DEFAULT_TTL_SECONDS = 30
"""A lease's ttl when a call names none."""
WAIT_MAX_SECONDS = 60
"""The longest one blocking wait for a lease may be (``waitSeconds``)."""
TTL_CEILING_SECONDS = 86400
"""The highest ``--ttl-max`` an operator may set (DESIGN §3.2): a day."""
DEAD_CEILING_SECONDS = 86400
"""The longest dead-man interval a scope's heartbeat may arm (``deadSeconds``): a day."""
DEFAULT_LIFECYCLE_SECONDS = 86400
"""A resource's lifecycle unless configured (``--lifecycle``), and how long a requestId is
remembered: a day."""
LIST_LIMIT_DEFAULT = 100
"""How many resources one page of ``GET /api/v1/leases`` lists when the caller names no limit."""
LIST_LIMIT_MAX = 200
"""The most resources one page of ``GET /api/v1/leases`` may list (``limit``)."""
