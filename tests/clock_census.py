"""Count the tests' real clocks: ``python tests/clock_census.py [--list]``.

* real sleeps: ``time.sleep`` / ``asyncio.sleep`` / ``anyio.sleep`` / ``trio.sleep``
  with a duration that is not the literal 0, outside the tests that run on a
  virtual-time loop (a module or test marked ``looptime``) and outside the tests
  marked ``realclock``; ``time.sleep`` counts in virtual-time tests too (it blocks
  the real thread whatever the loop);
* wall-clock reads: ``time.monotonic()``, ``time.perf_counter()``, ``time.time()``
  outside the tests marked ``realclock`` (the ones that may assert on wall time);
* realclock tests: test functions marked ``realclock``.

Grep-level, by the syntax tree: a helper's read counts as outside ``realclock``.
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


def census(listing: bool = False) -> dict[str, int]:
    counts = {
        "real sleeps in tests": 0,
        "real sleeps in support files": 0,
        "wall-clock reads in tests": 0,
        "wall-clock reads in support files": 0,
        "realclock tests": 0,
    }
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts or path.name == "clock_census.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        module = _module_marks(tree)
        where = "tests" if path.name.startswith("test_") else "support files"
        for top in tree.body:
            marks = set(module)
            if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                marks |= _marks(top.decorator_list)
                if top.name.startswith("test") and "realclock" in marks:
                    counts["realclock tests"] += 1
            virtual = "looptime" in marks and "realclock" not in marks
            for node in ast.walk(top):
                if not isinstance(node, ast.Call):
                    continue
                name = _dotted(node.func)
                if name in SLEEPS:
                    zero = (
                        node.args
                        and isinstance(node.args[0], ast.Constant)
                        and node.args[0].value == 0
                    )
                    real = name == ("time", "sleep") or not virtual
                    if not zero and real and "realclock" not in marks:
                        counts[f"real sleeps in {where}"] += 1
                        if listing:
                            print(f"sleep {path.relative_to(TESTS)}:{node.lineno}")
                elif name in CLOCKS and "realclock" not in marks:
                    counts[f"wall-clock reads in {where}"] += 1
                    if listing:
                        print(f"clock {path.relative_to(TESTS)}:{node.lineno}")
    return counts


if __name__ == "__main__":
    for key, value in census("--list" in sys.argv).items():
        print(f"{key}: {value}")
