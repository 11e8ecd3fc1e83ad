"""Which modules of ledger/ mention or carry rule 12's requestId, at two revisions. Not a test.

A module counts if its text matches ``request_?[iI]d|requestId`` (the crude ``grep -lE``). The
schema and migration history (the tables as created and as they were) is listed apart: changing
the rule reads the model, the stored request's codec and one backend's read and write. Each
revision is read with ``git show``, so neither needs checking out; ``worktree`` is the files
as they are now.

    .venv/bin/python bench/rule12_modules.py [BEFORE [AFTER]]   # 27e7bf6 worktree
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERN = re.compile(r"request_?[iI]d|requestId")
HISTORY = frozenset(
    {
        "ledger/sqlite/schema.py",
        "ledger/sqlite/migrations.py",
        "ledger/postgres/schema.py",
        "ledger/postgres/sealed.py",
        "ledger/keys/rekey.py",
        "ledger/keys/unsealed.py",
        "ledger/rekey.py",  # where they were before the wings became packages (0024)
        "ledger/unsealed.py",
    }
)
"""Modules that create the tables or migrate older ledgers (docs/decisions/0010's steps)."""
BACKENDS = ("ledger/sqlite/", "ledger/postgres/")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def modules(revision: str) -> list[str]:
    """The ledger/ modules at ``revision`` whose text matches :data:`PATTERN`."""
    if revision == "worktree":
        paths = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "ledger").rglob("*.py"))
        text = {path: (ROOT / path).read_text(encoding="utf-8") for path in paths}
    else:
        listed = _git("ls-tree", "-r", "--name-only", revision, "ledger/").split()
        paths = sorted(path for path in listed if path.endswith(".py"))
        text = {path: _git("show", f"{revision}:{path}") for path in paths}
    return [path for path in paths if PATTERN.search(text[path])]


def report(revision: str) -> None:
    found = modules(revision)
    history = [path for path in found if path in HISTORY]
    rule = [path for path in found if path not in HISTORY]
    model = [path for path in rule if not path.startswith(BACKENDS)]
    per_backend = {b: [p for p in rule if p.startswith(b)] for b in BACKENDS}
    one = len(model) + max(len(paths) for paths in per_backend.values())
    print(f"{revision}: {len(found)} modules match, {len(rule)} without the schema history")
    print(f"  model ({len(model)}): {' '.join(p.removeprefix('ledger/') for p in model)}")
    for backend, paths in per_backend.items():
        names = " ".join(p.removeprefix(backend) for p in paths)
        print(f"  {backend} ({len(paths)}): {names}")
    print(f"  schema history ({len(history)}): {' '.join(history)}")
    print(f"  to change the rule with one backend: {one} modules")


if __name__ == "__main__":
    revisions = [*sys.argv[1:], "27e7bf6", "worktree"][:2] if len(sys.argv) < 3 else sys.argv[1:3]
    for revision in revisions:
        report(revision)
