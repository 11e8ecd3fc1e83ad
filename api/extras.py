"""Which extra each `tenure` command needs installed, checked before the command starts.

The base install (``pip install tenure``) is the offline verifier only; a command that needs
more says which extra to install and exits 2, rather than failing on an import halfway through.
The requirements are read from tenure's own installed metadata, so pyproject.toml stays the one
place that lists them.
"""

from __future__ import annotations

import importlib.metadata
import re

NEEDS = {
    "serve": "server",
    "apikey": "server",
    "export": "server",
    "lease run": "client",
    "lease revoke": "server",
    "monitor": "monitor",
    "mcp": "mcp",
}
"""The extra each (sub)command needs; the others (``audit``, ``keys``) run on the base install."""
OURS = ("api", "ledger", "verify")
_NAME = re.compile(r"[A-Za-z0-9._-]+")


def missing(extra: str) -> list[str]:
    """The distributions ``tenure[extra]`` requires that are not installed (none when tenure
    itself is not installed, as in a bare source tree: there is nothing to compare with)."""
    try:
        requires = importlib.metadata.requires("tenure") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    absent: list[str] = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        found = _NAME.match(spec.strip())
        if found is None or f'extra == "{extra}"' not in marker.replace("'", '"'):
            continue
        try:
            importlib.metadata.version(found.group(0))
        except importlib.metadata.PackageNotFoundError:
            absent.append(found.group(0))
    return absent


def install_hint(command: str, names: list[str]) -> str:
    """The message for ``command`` ("serve", "lease run", …) when its extra is missing."""
    extra = NEEDS.get(command, "server")
    return (
        f"`tenure {command}` needs the {extra} extra (missing: {', '.join(names)}):"
        f" pip install 'tenure[{extra}]'"
    )


def problem(command: str, database: bool = False) -> str | None:
    """Why ``command`` ("serve", "lease run", …) cannot run on this install, or None; with
    ``--database`` a server command needs ``[postgres]`` too."""
    extra = NEEDS.get(command)
    if extra is None:
        return None
    absent = missing(extra)
    if absent:
        return install_hint(command, absent)
    if database and extra == "server" and (absent := missing("postgres")):
        return (
            f"--database needs the postgres extra (missing: {', '.join(absent)}):"
            " pip install 'tenure[postgres]'"
        )
    return None


def third_party(error: ModuleNotFoundError) -> bool:
    """Whether an import failed on another project's module (a missing dependency), not ours
    (which would be a packaging bug, and should show as one)."""
    top = (error.name or "").partition(".")[0]
    return bool(top) and top not in OURS
