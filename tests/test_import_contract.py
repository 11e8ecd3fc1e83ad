"""The three floors (README): verify/ imports neither ledger/ nor api/; ledger/ never imports api/.

Walks the AST of every module, so an import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

FORBIDDEN = {"verify": ("ledger", "api"), "ledger": ("api",)}


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("floor", sorted(FORBIDDEN))
def test_no_floor_imports_a_higher_one(floor: str) -> None:
    modules = sorted((ROOT / floor).rglob("*.py"))
    assert modules
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules
        for name in imported(path)
        if name.split(".")[0] in FORBIDDEN[floor]
    ]
    assert wrong == []


def test_the_walk_sees_a_function_level_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from api.app import create_app\n")
    assert imported(module) == {"api.app"}
