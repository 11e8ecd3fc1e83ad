"""Code says what and why, not its history: no code file names an issue by number (say the
reason, or point to docs/decisions/), and no module docstring runs past 12 lines — rule lists
excepted. Timings and history belong in docs/performance.md and the decision records."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

ROOTS = ("api", "verify", "ledger", "native", "scripts", "tests", "bench")
SUFFIXES = frozenset({".py", ".c", ".h", ".js", ".sh", ".toml"})
SKIPPED = frozenset({"node_modules", "__pycache__", ".venv"})
MAX_DOCSTRING_LINES = 12
ISSUE = re.compile(r"\bissues?\s*#?\d", re.IGNORECASE)

# Modules whose docstring is the list of rules or checks they enforce: read whole, the spec.
RULE_LISTS = frozenset(
    {"ledger/lease/leases.py", "verify/invariants.py", "api/names.py", "api/client/keeper.py"}
    | {"verify/audit.py", "verify/bundle.py", "verify/monitor.py"}
)

# Files (or folders, ending in "/") being reworked by their owners right now; each entry must
# still hold a finding, so the list only shrinks.
PENDING: tuple[str, ...] = ()


def code_files() -> Iterator[Path]:
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and not SKIPPED & set(path.parts):
                yield path


def issue_mentions(text: str) -> list[int]:
    """Line numbers that name an issue by its number."""
    return [n for n, line in enumerate(text.splitlines(), 1) if ISSUE.search(line)]


def docstring_lines(source: str) -> int:
    """How many lines the module docstring spans (0 when there is none)."""
    body = ast.parse(source).body
    first = body[0] if body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        return 0
    if not isinstance(first.value.value, str) or first.end_lineno is None:
        return 0
    return first.end_lineno - first.lineno + 1


def findings() -> dict[str, list[str]]:
    """Every finding, by file path relative to the repository."""
    found: dict[str, list[str]] = {}
    for path in code_files():
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        problems = [f"line {n} names an issue number" for n in issue_mentions(text)]
        if path.suffix == ".py" and name not in RULE_LISTS:
            lines = docstring_lines(text)
            if lines > MAX_DOCSTRING_LINES:
                problems.append(f"module docstring of {lines} lines")
        if problems:
            found[name] = problems
    return found


def covers(entry: str, name: str) -> bool:
    return name == entry or (entry.endswith("/") and name.startswith(entry))


def pending(name: str) -> bool:
    return any(covers(entry, name) for entry in PENDING)


def test_no_issue_numbers_and_short_docstrings() -> None:
    wrong = {name: problems for name, problems in findings().items() if not pending(name)}
    assert wrong == {}


def test_every_pending_entry_still_has_a_finding() -> None:
    found = findings()
    clean = [entry for entry in PENDING if not any(covers(entry, name) for name in found)]
    assert clean == [], "clean now: remove from PENDING"


def test_the_pattern_sees_the_ways_an_issue_is_named() -> None:
    word = "iss" + "ue"
    named = [f"({word} 10)", f"{word.title()} 8, item 2", f"({word}s 10, 15)", f"{word} #31"]
    assert all(issue_mentions(line) == [1] for line in named)
    assert issue_mentions(f"tissue 3\nan {word}-free path\n{word}s of scale") == []


def test_a_long_module_docstring_is_counted() -> None:
    long = '"""' + "\n".join(["x"] * 13) + '"""\nX = 1\n'
    assert docstring_lines(long) == 13
    assert docstring_lines('"""One line."""\n') == 1
    assert docstring_lines("X = 1\n") == 0
    assert docstring_lines("") == 0
