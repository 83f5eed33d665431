"""Case files: loading, the checks a case file must pass, and what a case expects.

A case file is JSON (``case.schema.json`` is its JSON Schema): one recorded
provider exchange (``request``: what the runtime is asked to do; ``response``:
the status, headers and body or stream the provider sent) and ``expected``: the
verdict the provider's documentation gives (``doc``), never a runtime's output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PROTOCOLS",
    "STOP_CLASSES",
    "Case",
    "CaseError",
    "cases_dir",
    "load_case",
    "load_cases",
]

STOP_CLASSES = (
    "end_turn",
    "tool_use",
    "max_output",
    "context_full",
    "refusal",
    "interrupted",
    "paused",
    "other",
)
"""The normalized stop classes (zett's ``StopReason`` values)."""

PROTOCOLS = ("anthropic", "openai-chat", "openai-responses", "gemini", "ollama")


class CaseError(ValueError):
    """A case file that is not valid (names the file and the field)."""


@dataclass(frozen=True)
class Case:
    """One case, as its file holds it (``data``), with typed accessors."""

    data: dict[str, Any]
    path: Path | None = None

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def protocol(self) -> str:
        return str(self.data["protocol"])

    @property
    def vendor(self) -> str:
        return str(self.data["vendor"])

    @property
    def stream(self) -> bool:
        return bool(self.data["request"]["stream"])

    @property
    def tools(self) -> list[str]:
        return list(self.data["request"]["tools"])

    @property
    def max_tokens(self) -> int | None:
        value = self.data["request"].get("max_tokens")
        return int(value) if value is not None else None

    @property
    def tool_choice(self) -> str | None:
        return self.data["request"].get("tool_choice")

    @property
    def status(self) -> int:
        return int(self.data["response"]["status"])

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.data["response"]["headers"])

    @property
    def body(self) -> str:
        return str(self.data["response"]["body"])

    @property
    def expected(self) -> dict[str, Any]:
        return dict(self.data["expected"])

    @property
    def twin(self) -> str | None:
        return self.data.get("twin")


def cases_dir() -> Path:
    """The committed cases: ``conformance/cases`` in a checkout, or the copy inside
    an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "cases", here / "cases"):
        if candidate.is_dir():
            return candidate
    raise CaseError(f"no cases folder next to {here}")


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise CaseError(f"{where}: {what}")


def validate(data: Any, where: str) -> None:
    """The checks of ``case.schema.json`` that matter to the harness, without a
    JSON Schema library (peer venvs install nothing for the suite itself).

    Raises :class:`CaseError` naming the file and the field."""
    _need(isinstance(data, dict), where, "a case is a JSON object")
    for key in ("id", "protocol", "vendor", "request", "response", "expected", "why", "doc"):
        _need(key in data, where, f"missing {key!r}")
    _need(data["protocol"] in PROTOCOLS, where, f"protocol must be one of {PROTOCOLS}")
    request, response, expected = data["request"], data["response"], data["expected"]
    _need(isinstance(request.get("stream"), bool), where, "request.stream must be a boolean")
    _need(isinstance(request.get("tools"), list) and request["tools"] != [], where,
          "request.tools must name at least one tool")  # fmt: skip
    _need(isinstance(response.get("status"), int), where, "response.status must be an integer")
    _need(isinstance(response.get("body"), str), where, "response.body must be a string")
    _need(expected.get("stop") in STOP_CLASSES, where, f"expected.stop is one of {STOP_CLASSES}")
    for key in ("tool_calls", "must_not_run"):
        names = expected.get(key)
        _need(isinstance(names, list), where, f"expected.{key} must be a list")
        for name in names:
            _need(name in request["tools"], where, f"expected.{key} names {name!r}, not offered")


def load_case(path: Path) -> Case:
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise CaseError(f"{path}: not JSON ({exc})") from exc
    validate(data, str(path))
    return Case(data, path)


def load_cases(folder: Path | None = None, only: Iterable[str] = ()) -> list[Case]:
    """Every case of ``folder`` (default :func:`cases_dir`), sorted by id; ``only``
    keeps the cases whose id starts with one of its prefixes."""
    prefixes = tuple(only)
    cases = [load_case(p) for p in sorted((folder or cases_dir()).glob("*.json"))]
    if prefixes:
        cases = [c for c in cases if c.id.startswith(prefixes)]
    ids = [c.id for c in cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CaseError(f"duplicate case ids: {dupes}")
    return sorted(cases, key=lambda c: c.id)
