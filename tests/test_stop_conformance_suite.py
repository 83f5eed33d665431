"""The stop-handling conformance suite (``conformance/``) run through zett's
adapter: every case's verdict (from the provider's documentation) is what a host
of zett observes, over a real socket, streamed and as a body. The suite's own
rules are checked too: the case files follow their schema and cover every
protocol, and the scoring fails a runtime that gets a case wrong."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
if str(CONFORMANCE / "src") not in sys.path:
    sys.path.insert(0, str(CONFORMANCE / "src"))

from zett_conformance import (  # noqa: E402
    CHECKS,
    PROTOCOLS,
    Case,
    Observation,
    ReplayServer,
    ToolBox,
    load_cases,
    run_cases,
    score,
)


def test_zett_passes_every_case() -> None:
    result = run_cases("zett", jobs=4)
    failed = {
        record["id"]: {
            "checks": [c for c, v in record["checks"].items() if v is False],
            "observed": record["observed"],
            "crash": record["crash"],
            "ran": record["ran"],
        }
        for record in result["cases"]
        if any(v is False for v in record["checks"].values())
    }
    assert failed == {}
    summary = result["summary"]
    assert summary["cases"]["passed"] == summary["cases"]["of"] == summary["cases"]["total"]
    for check in CHECKS:
        assert summary[check]["of"] > 0, check


def test_cases_cover_every_protocol_streamed_and_as_a_body() -> None:
    cases = load_cases()
    assert len(cases) >= 140
    kinds = Counter((c.protocol, c.stream) for c in cases)
    for protocol in PROTOCOLS:
        assert kinds[(protocol, True)] > 0 and kinds[(protocol, False)] > 0, protocol
    stops = Counter(c.expected["stop"] for c in cases)
    assert set(stops) == {
        "end_turn", "tool_use", "max_output", "context_full",
        "refusal", "interrupted", "paused", "other",
    }  # fmt: skip
    assert sum(bool(c.expected["must_not_run"]) for c in cases) >= 20
    twins = Counter(c.twin for c in cases if c.twin)
    assert all(n == 2 for n in twins.values())


def test_case_files_follow_their_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((CONFORMANCE / "case.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((CONFORMANCE / "cases").glob("*.json")):
        data = json.loads(path.read_text())
        assert [e.message for e in validator.iter_errors(data)] == [], path.name
        assert path.name == f"{data['id']}.json"


def _naive(case: Case, base_url: str, tools: ToolBox) -> Observation:
    """A host that runs every offered tool and calls every answer a normal end."""
    for name in tools.names:
        tools.call(name)
    return Observation("end_turn", tool_calls=list(tools.names))


def test_the_scoring_fails_a_runtime_that_gets_cases_wrong() -> None:
    cases = [c for c in load_cases() if c.id.startswith(("loop.refusal_with_call.", "corpus.a"))]
    records: list[dict[str, Any]] = []
    for case in cases:
        tools = ToolBox(case.tools)
        with ReplayServer(case) as server:
            observed = _naive(case, server.url, tools)
        records.append({"id": case.id, "protocol": case.protocol, "twin": case.twin,
                        "applicable": True, "observed": observed.__dict__, "crash": None,
                        "ran": dict(tools.ran)})  # fmt: skip
    summary = score(cases, records)
    assert summary["tools"]["passed"] == 0 < summary["tools"]["of"]
    assert summary["stop"]["passed"] < summary["stop"]["of"]
    assert summary["raw"]["passed"] == 0 < summary["raw"]["of"]
    assert summary["cases"]["passed"] < summary["cases"]["of"]
