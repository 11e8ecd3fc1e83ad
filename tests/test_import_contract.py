"""The three floors (README): verify/ imports neither ledger/ nor api/; ledger/ never imports api/.

Walks the AST of every module, so an import inside a function counts too. Also the seam's
boundaries (docs/decisions/0024): no import circle in ledger/, one importer of a backend, a
small ``Storage``, and backends whose SQL is their own methods, not forwarders to functions."""

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


def import_graph(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports (by the AST)."""
    paths = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for path in (ROOT / package).rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found = imported(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # ``from ledger.lease import waits`` names the module ledger.lease.waits
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {other for other in found if other in paths and other != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The import circles: the strongly connected components of more than one module."""
    reach = {name: _reachable(graph, name) for name in graph}
    found: list[set[str]] = []
    for name in sorted(graph):
        circle = {other for other in reach[name] if name in reach[other]} | {name}
        if len(circle) > 1 and circle not in found:
            found.append(circle)
    return found


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for other in graph[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def test_circles_finds_the_circle_and_not_what_leads_into_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [{"a", "b", "c"}]


def test_no_import_circle_among_ledger_modules() -> None:
    """Neither a module-level nor a function-level import closes a circle: the seam imports no
    backend, a backend's modules import each other one way."""
    assert [sorted(circle) for circle in circles(import_graph("ledger"))] == []


BACKENDS = ("ledger.sqlite", "ledger.postgres")


def test_only_ledger_backends_imports_a_backend() -> None:
    """``ledger/backends.py`` is the one place that chooses a backend by URL."""
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for floor in ("ledger", "api", "verify")
        for path in sorted((ROOT / floor).rglob("*.py"))
        if not _inside_a_backend(path)
        for name in imported(path)
        if any(name == backend or name.startswith(backend + ".") for backend in BACKENDS)
    ]
    assert wrong == []


def _inside_a_backend(path: Path) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return relative == "ledger/backends.py" or relative.startswith(
        ("ledger/sqlite/", "ledger/postgres/")
    )


def test_the_storage_seam_has_at_most_30_members_and_no_speed_hooks() -> None:
    """``Storage`` is the transaction and the domain reads; the writer's hooks and the gauges
    are protocols of their own, which a backend may offer."""
    from ledger.storage import Gauges, Storage
    from ledger.writer.strategy import WriterStrategy

    members = {name for name in vars(Storage) if not name.startswith("_")}
    assert len(members) <= 30, sorted(members)
    hooks = {name for protocol in (WriterStrategy, Gauges) for name in vars(protocol)}
    assert members & {"turns", "warm_lease", "live_leases", "queued_waiters"} == set()
    assert {"turns", "warm_lease", "live_leases", "queued_waiters"} <= hooks


def forwarders(source: str) -> list[str]:
    """Methods that, after assignments at most, hand over to a function of another module of the
    backend, called or passed (``return reads.node(self.conn, level, index)``,
    ``self._read(reads.keys)``): a class of forwarders over module functions."""
    tree = ast.parse(source)
    modules = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module in ("ledger.sqlite", "ledger.postgres")
        for alias in node.names
    }
    found: list[str] = []
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        for method in (node for node in cls.body if isinstance(node, ast.FunctionDef)):
            body = [stmt for stmt in method.body if not _docstring(stmt)]
            setup = all(isinstance(stmt, ast.Assign) for stmt in body[:-1])
            if body and setup and _hands_over(body[-1], modules):
                found.append(f"{cls.name}.{method.name}")
    return found


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _hands_over(node: ast.AST, modules: set[str]) -> bool:
    if isinstance(node, (ast.Return, ast.Expr)) and node.value is not None:
        return _hands_over(node.value, modules)
    if isinstance(node, ast.Lambda):
        return _hands_over(node.body, modules)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in modules
    if isinstance(node, ast.Call):
        return _hands_over(node.func, modules) or any(_hands_over(a, modules) for a in node.args)
    return False


def test_forwarders_finds_a_forwarding_method_and_not_one_that_decides() -> None:
    source = (
        "from ledger.sqlite import reads\n"
        "class T:\n"
        "    def node(self, level):\n"
        "        return reads.node(self._conn, level)\n"
        "    def keys(self):\n"
        "        return self._read(lambda conn: reads.keys(conn))\n"
        "    def waiters(self, tenant):\n"
        "        names = self._names\n"
        "        return reads.waiters(self._conn, names, tenant)\n"
        "    def entry(self, index):\n"
        "        found = self._cache.get(index)\n"
        "        return reads.entry(self._conn, index) if found is None else found\n"
    )
    assert forwarders(source) == ["T.node", "T.keys", "T.waiters"]


def test_backends_have_no_forwarder_layer() -> None:
    """A backend's reads and writes are its own methods (the SQL inherited from ``reads.py``),
    not one-line hand-overs to module functions."""
    found = {
        path.relative_to(ROOT).as_posix(): forwarders(path.read_text(encoding="utf-8"))
        for backend in ("sqlite", "postgres")
        for path in sorted((ROOT / "ledger" / backend).glob("*.py"))
    }
    assert {name: methods for name, methods in found.items() if methods} == {}


WINGS = ("keys", "log", "lease", "writer")
"""The wings of ``ledger/`` (docs/decisions/0024), lowest first: each imports only the wings
before it, the seam and the shared helpers — never the wiring or a backend."""
WIRING = (
    "ledger.backends",
    "ledger.runtime",
    "ledger.rotation",
    "ledger.sqlite",
    "ledger.postgres",
)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a wing's module that reaches a wing above it or the wiring."""
    wrong = []
    for module, imports in sorted(graph.items()):
        wing = _wing(module)
        for other in sorted(imports) if wing is not None else ():
            theirs = _wing(other)
            above = theirs is not None and WINGS.index(theirs) > WINGS.index(wing)
            if above or other.startswith(WIRING):
                wrong.append(f"{module} imports {other}")
    return wrong


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in WINGS else None


def test_each_wing_imports_only_the_wings_below_it() -> None:
    assert upward(import_graph("ledger")) == []


def test_an_upward_import_is_found() -> None:
    graph = {
        "ledger.log.view": {"ledger.keys.keyring", "ledger.lease.entries"},
        "ledger.keys.rotation": {"ledger.backends"},
        "ledger.lease.batch": {"ledger.log.merkle", "ledger.storage"},
    }
    assert upward(graph) == [
        "ledger.keys.rotation imports ledger.backends",
        "ledger.log.view imports ledger.lease.entries",
    ]
