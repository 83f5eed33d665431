"""Running a runtime's adapter over the cases, and scoring what it observed.

An adapter is a module with ``NAME``, ``PROTOCOLS`` (the wire protocols it can be
pointed at; an optional ``applies(case)`` narrows that, an optional ``JOBS`` caps
the cases run at a time), ``version()`` and ``run(case, base_url, tools) ->
Observation``: it drives its runtime against the replay at ``base_url`` with the
case's tools and reports what a host of that runtime can observe. It catches the runtime's own
typed errors (a host's ``except``) and reports them in ``Observation.error``;
anything else escaping it, or a run past :data:`CASE_TIMEOUT`, is a crash.

The checks, per case (None: not applicable to that case):

=========== ===============================================================
stop        the observed stop class is ``expected.stop``
raw         ``expected.raw`` is among the raw values the host can see, when
            the case names one and its stop is not a normal end (``end_turn``,
            ``tool_use``: there the class says all a host acts on)
tools       no tool of ``expected.must_not_run`` ran (the side-effect counter)
agreement   the twin cases (the same answer streamed and as a body) gave the
            same stop class
kept        ``expected.text`` is in the observed text and every call of
            ``expected.tool_calls`` was handed to the host
no_crash    the runtime ended with a result or its own typed error, in time
=========== ===============================================================
"""

from __future__ import annotations

import concurrent.futures
import importlib
import json
import platform
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ._cases import STOP_CLASSES, Case, load_cases
from ._replay import ReplayServer, wants_stream
from ._tools import ToolBox

__all__ = [
    "ADAPTERS",
    "CASE_TIMEOUT",
    "CHECKS",
    "Observation",
    "load_adapter",
    "run_cases",
    "score",
]

CASE_TIMEOUT = 60.0
_NORMAL = frozenset({"end_turn", "tool_use"})
CHECKS = ("stop", "raw", "tools", "agreement", "kept", "no_crash")

ADAPTERS = {
    "zett": "zett_conformance.adapters.zett",
    "openai-sdk": "zett_conformance.adapters.openai_sdk",
    "anthropic-sdk": "zett_conformance.adapters.anthropic_sdk",
    "pydantic-ai": "zett_conformance.adapters.pydantic_ai",
    "litellm": "zett_conformance.adapters.litellm",
    "zett-0.2.1": "zett_conformance.adapters.zett_021",
    "langchain": "zett_conformance.adapters.langchain",
    "vercel-ai": "zett_conformance.adapters.vercel_ai",
    "openai-agents": "zett_conformance.adapters.openai_agents",
}


@dataclass
class Observation:
    """What a host of one runtime observed of one case.

    ``stop``: the stop class the adapter read from the runtime's own report (its
    mapping is the runtime's vocabulary onto the 8 classes, documented in the
    adapter), None when the runtime reported nothing; ``raw``: the provider
    values the host can read (a finish reason, an error code); ``error``: the
    runtime's typed error the host caught, ``"Type: message"``.
    """

    stop: str | None
    raw: list[str] = field(default_factory=list)
    text: str = ""
    tool_calls: list[str] = field(default_factory=list)
    error: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.stop is not None and self.stop not in STOP_CLASSES:
            raise ValueError(f"not a stop class: {self.stop!r}")


def load_adapter(runtime: str) -> ModuleType:
    if runtime not in ADAPTERS:
        raise SystemExit(f"unknown runtime {runtime!r}; known: {', '.join(ADAPTERS)}")
    return importlib.import_module(ADAPTERS[runtime])


def _one(adapter: ModuleType, case: Case) -> dict[str, Any]:
    record: dict[str, Any] = {"id": case.id, "protocol": case.protocol, "twin": case.twin}
    applies = getattr(adapter, "applies", None)
    if case.protocol not in adapter.PROTOCOLS or (applies is not None and not applies(case)):
        record["applicable"] = False
        return record
    record["applicable"] = True
    tools = ToolBox(case.tools)
    crash = None
    observed: Observation | None = None
    with ReplayServer(case) as server:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        future = pool.submit(adapter.run, case, server.url, tools)
        try:
            observed = future.result(timeout=CASE_TIMEOUT)
        except concurrent.futures.TimeoutError:
            crash = f"no result within {CASE_TIMEOUT:.0f} s"
        except BaseException as exc:
            crash = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        pool.shutdown(wait=False, cancel_futures=True)
        record["requests"] = len(server.requests)
        if server.requests:  # a runtime that asked for a body got the case's stream (or not)
            _method, path, body = server.requests[0]
            record["asked_stream"] = wants_stream(case.protocol, path, body)
    record["observed"] = asdict(observed) if observed else None
    record["crash"] = crash
    record["ran"] = dict(tools.ran)
    return record


def _checks(case: Case, record: dict[str, Any]) -> dict[str, bool | None]:
    expected = case.expected
    observed = record["observed"]
    must_not = expected["must_not_run"]
    text = expected.get("text")
    kept_applies = bool(text) or bool(expected["tool_calls"])
    raw_applies = bool(expected.get("raw")) and expected["stop"] not in _NORMAL
    tools = all(record["ran"].get(n, 0) == 0 for n in must_not) if must_not else None
    if observed is None:  # a crash: what applies fails, except what the counter says
        return {
            "stop": False,
            "raw": False if raw_applies else None,
            "tools": tools,
            "agreement": None,
            "kept": False if kept_applies else None,
            "no_crash": False,
        }
    return {
        "stop": observed["stop"] == expected["stop"],
        "raw": (expected["raw"] in observed["raw"]) if raw_applies else None,
        "tools": tools,
        "agreement": None,
        "kept": (
            ((not text) or text in observed["text"])
            and all(n in observed["tool_calls"] for n in expected["tool_calls"])
        )
        if kept_applies
        else None,
        "no_crash": True,
    }


def score(cases: list[Case], records: list[dict[str, Any]]) -> dict[str, Any]:
    """Fill each applicable record's ``checks`` and sum them per check."""
    by_id = {c.id: c for c in cases}
    for record in records:
        if record["applicable"]:
            record["checks"] = _checks(by_id[record["id"]], record)
    twins: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["applicable"] and record["twin"]:
            twins.setdefault(record["twin"], []).append(record)
    for group in twins.values():
        if len(group) < 2:
            continue
        stops = {(r["observed"] or {}).get("stop", "crash") for r in group}
        for r in group:
            r["checks"]["agreement"] = len(stops) == 1 and r["observed"] is not None
    summary = {}
    for check in CHECKS:
        values = [r["checks"][check] for r in records if r["applicable"]]
        applicable = [v for v in values if v is not None]
        summary[check] = {"passed": sum(applicable), "of": len(applicable)}
    summary["asked_other_mode"] = sum(
        r.get("asked_stream") is not None and r["asked_stream"] != by_id[r["id"]].stream
        for r in records
        if r["applicable"]
    )
    summary["cases"] = {
        "passed": sum(
            all(v is not False for v in r["checks"].values()) for r in records if r["applicable"]
        ),
        "of": sum(r["applicable"] for r in records),
        "total": len(records),
    }
    return summary


def run_cases(runtime: str, only: Iterable[str] = (), *, jobs: int = 1) -> dict[str, Any]:
    """Run ``runtime``'s adapter over the cases (``jobs`` at a time, each with its
    own replay server); the result document (JSON-ready)."""
    adapter = load_adapter(runtime)
    cases = load_cases(only=only)
    jobs = min(jobs, getattr(adapter, "JOBS", jobs))  # an adapter may need fewer
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        records = list(pool.map(lambda case: _one(adapter, case), cases))
    summary = score(cases, records)
    return {
        "runtime": runtime,
        "version": adapter.version(),
        "python": platform.python_version(),
        "summary": summary,
        "cases": records,
    }


def write_result(result: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result['runtime']}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    return path
