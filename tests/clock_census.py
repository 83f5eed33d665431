"""Count the tests' real clocks: ``python tests/clock_census.py [--list]``.

* real sleeps: ``time.sleep`` / ``asyncio.sleep`` / ``anyio.sleep`` / ``trio.sleep``
  with a duration that is not the literal 0, outside the tests that run on a
  virtual-time loop (a module or test marked ``looptime``) and outside the tests
  marked ``realclock``; ``time.sleep`` counts in virtual-time tests too (it blocks
  the real thread whatever the loop). A sleep inside a ``while`` loop (or a ``for``
  loop that breaks out) is a *poll* (waiting for a child process or a thread to
  get somewhere) and counted apart;
* wall-clock assertions: an ``assert`` on a duration of wall time (a difference of
  ``time.monotonic()`` / ``time.perf_counter()`` / ``time.time()`` reads, directly
  or through a name bound to one) outside the tests marked ``realclock``; a poll's
  guard (``assert time.monotonic() < deadline``) is not one;
* wall-clock reads: every such call outside ``realclock`` tests (deadlines of polls,
  wall-clock data such as a reset time, and the assertions' reads);
* realclock tests: test functions marked ``realclock``.

Grep-level, by the syntax tree: a helper's read counts as outside ``realclock``;
a helper (a top-level function or class) that only virtual-time tests of its
module use is on virtual time too.
Test modules (``test_*.py``) and support files (helpers, child processes the tests
start and kill) are counted apart. The sleeps of ``ReplayServer``'s thread
(``Reply(delay=, stall_seconds=)``) are not counted.
Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

TESTS = Path(__file__).parent
SLEEPS = {("time", "sleep"), ("asyncio", "sleep"), ("anyio", "sleep"), ("trio", "sleep")}
CLOCKS = {("time", "monotonic"), ("time", "perf_counter"), ("time", "time")}


def _marks(decorators: list[ast.expr]) -> set[str]:
    names: set[str] = set()
    for node in decorators:
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.value, ast.Attribute)
                and sub.value.attr == "mark"
            ):
                names.add(sub.attr)
    return names


def _module_marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return _marks([node.value])
    return set()


def _dotted(func: ast.expr) -> tuple[str, str] | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    return None


def _is_clock(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func) in CLOCKS


def _target(node: ast.expr) -> str | None:
    """A name or ``x.attr`` bound by an assignment, as text."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _uses(node: ast.AST) -> set[str]:
    used: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            used.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            used.add(sub.attr)
    return used


def _durations(top: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound to a clock read, and names bound to a difference involving one."""
    reads: set[str] = set()
    durations: set[str] = set()
    for _ in range(2):  # twice: a duration may be built from a name bound later
        for node in ast.walk(top):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                value = node.value
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if value is None:
                    continue
                names = {t for t in map(_target, targets) if t}
                if any(_is_clock(sub) for sub in ast.walk(value)):
                    reads |= names
                if _is_difference(value, reads, durations):
                    durations |= names
            elif isinstance(node, ast.Call) and _target(node.func) == "append" and node.args:
                owner = node.func.value if isinstance(node.func, ast.Attribute) else None
                name = _target(owner) if owner is not None else None
                if name and _is_difference(node.args[0], reads, durations):
                    durations.add(name)
    return reads, durations


def _is_difference(node: ast.AST, reads: set[str], durations: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name | ast.Attribute) and _target(sub) in durations:
            return True
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub):
            for side in (sub.left, sub.right):
                if _is_clock(side) or _target(side) in reads:  # type: ignore[arg-type]
                    return True
    return False


def census(listing: bool = False) -> dict[str, int]:
    counts: dict[str, int] = {}
    for where in ("tests", "support files"):
        for what in ("real sleeps", "poll sleeps", "wall-clock assertions", "wall-clock reads"):
            counts[f"{what} in {where}"] = 0
    counts["realclock tests"] = 0

    def note(what: str, where: str, path: Path, line: int) -> None:
        counts[f"{what} in {where}"] += 1
        if listing:
            print(f"{what:22} {path.relative_to(TESTS)}:{line}")

    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts or path.name == "clock_census.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        module = _module_marks(tree)
        where = "tests" if path.name.startswith("test_") else "support files"
        own: dict[str, set[str]] = {}
        for top in tree.body:
            if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own[top.name] = module | _marks(top.decorator_list)
        users: dict[str, list[set[str]]] = {}
        for top in tree.body:
            if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                for name in _uses(top) & set(own) - {top.name}:
                    users.setdefault(name, []).append(own[top.name])
        for top in tree.body:
            marks = set(module)
            if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                marks |= _marks(top.decorator_list)
                used_by = users.get(top.name, [])
                if used_by and all("looptime" in m and "realclock" not in m for m in used_by):
                    marks.add("looptime")
                if top.name.startswith("test") and "realclock" in marks:
                    counts["realclock tests"] += 1
            if "realclock" in marks:
                continue
            virtual = "looptime" in marks
            reads, durations = _durations(top)
            in_while: set[int] = set()
            for node in ast.walk(top):
                breaks = isinstance(node, ast.For) and any(
                    isinstance(sub, ast.Break) for sub in ast.walk(node)
                )
                if isinstance(node, ast.While) or breaks:
                    in_while |= {id(sub) for sub in ast.walk(node)}
            for node in ast.walk(top):
                if isinstance(node, ast.Assert) and _is_difference(node.test, reads, durations):
                    note("wall-clock assertions", where, path, node.lineno)
                if not isinstance(node, ast.Call):
                    continue
                name = _dotted(node.func)
                if name in SLEEPS:
                    zero = (
                        node.args
                        and isinstance(node.args[0], ast.Constant)
                        and node.args[0].value == 0
                    )
                    if not zero and (name == ("time", "sleep") or not virtual):
                        kind = "poll sleeps" if id(node) in in_while else "real sleeps"
                        note(kind, where, path, node.lineno)
                elif name in CLOCKS:
                    note("wall-clock reads", where, path, node.lineno)
    return counts


if __name__ == "__main__":
    for key, value in census("--list" in sys.argv).items():
        print(f"{key}: {value}")
