"""The loggers zett writes to keep their names when modules move.

A host sets levels and handlers by logger name (``zett_agent.recovery``,
``zett_agent.steps``...). Those names are API: they are written as literals, never
``__name__`` (which would follow a private module's path), and pinned here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import zett_agent

LOGGERS = {
    "zett_agent.a2a",
    "zett_agent.client",
    "zett_agent.durable",
    "zett_agent.goals",
    "zett_agent.history",
    "zett_agent.mcp",
    "zett_agent.recovery",
    "zett_agent.serve",
    "zett_agent.steps",
    "zett_agent.subagents",
}


def logger_names() -> tuple[set[str], list[str]]:
    names: set[str] = set()
    dynamic: list[str] = []
    for path in Path(zett_agent.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and node.args
            ):
                argument = node.args[0]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    if argument.value.startswith("zett_agent"):
                        names.add(argument.value)
                elif isinstance(argument, ast.Name) and argument.id == "__name__":
                    dynamic.append(str(path))
    return names, dynamic


def test_every_logger_has_a_stable_public_name() -> None:
    names, dynamic = logger_names()
    assert dynamic == []  # getLogger(__name__) would be a private module's path
    assert names == LOGGERS
