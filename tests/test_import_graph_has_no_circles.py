"""No two modules of ``zett_agent`` import each other, directly or around a circle.

Every import a module makes at run time counts, at module level and inside
functions alike (a function-local import only hides a circle until the function
runs). Imports under ``if TYPE_CHECKING:`` are for the type checker and may point
back. An edge goes to the module named: ``from zett_agent.a import b`` is an edge to
``zett_agent.a.b`` when that is a module, else to ``zett_agent.a``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import zett_agent

ROOT = Path(zett_agent.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _target(name: str) -> str | None:
    """The module ``name`` is, or the nearest enclosing module we have."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def run_time_imports(name: str) -> set[str]:
    path = MODULES[name]
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("zett_agent"):
                    target = _target(alias.name)
                    if target:
                        out.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                if node.level > 1:
                    anchor = anchor[: -(node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base.startswith("zett_agent"):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    target = full if full in MODULES else _target(base)
                    if target:
                        out.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(name)
    return out


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_finder_sees_a_circle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_circle_among_run_time_imports() -> None:
    graph = {name: run_time_imports(name) for name in MODULES}
    assert sum(len(edges) for edges in graph.values()) > 300  # the walk found the imports
    assert strongly_connected(graph) == []
