"""The side-effect counter: every tool a case offers is a local function that
counts its calls, so "the call did not run" is a fact, not what a runtime says."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["TOOL_SCHEMA", "ToolBox"]

TOOL_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
"""The argument schema every case tool is offered with: any object."""


class ToolBox:
    """The tools of one case run: ``function(name)`` is the callable a runtime is
    given; ``ran[name]`` how many times it was entered; ``calls`` the arguments."""

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)
        self.ran: Counter[str] = Counter()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        with self._lock:
            self.ran[name] += 1
            self.calls.append((name, dict(arguments or {})))
        return f"{name} done"

    def function(self, name: str) -> Callable[..., str]:
        def tool(**kwargs: Any) -> str:
            return self.call(name, kwargs)

        tool.__name__ = name
        tool.__doc__ = f"The case tool {name}: counts its calls."
        return tool
