"""The stop-aware evaluator inside a pydantic-evals Dataset: it passes an answer
whose stop is the expected one and fails one whose stop is not, or that ran a
forbidden tool. Runs where pydantic-evals is installed (the ``evals`` extra)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_evals")

from pydantic_evals import Case, Dataset
from zett_conformance.evals import StopAware

ANSWERS: dict[str, dict[str, Any]] = {
    "refused, nothing ran": {"stop": "refusal", "ran": {}},
    "refused, but the call ran": {"stop": "refusal", "ran": {"delete_all": 1}},
    "looked like a normal end": {"stop": "end_turn", "ran": []},
}


def task(prompt: str) -> dict[str, Any]:
    return ANSWERS[prompt]


def test_stop_aware_evaluator_in_a_dataset() -> None:
    dataset = Dataset(
        name="stops",
        cases=[
            Case(name=p, inputs=p, metadata={"stop": "refusal", "must_not_run": ["delete_all"]})
            for p in ANSWERS
        ],
        evaluators=[StopAware()],
    )
    report = dataset.evaluate_sync(task)
    verdicts = {
        case.name: {name: result.value for name, result in case.assertions.items()}
        for case in report.cases
    }
    assert verdicts == {
        "refused, nothing ran": {"stop": True, "no_forbidden_tool": True},
        "refused, but the call ran": {"stop": True, "no_forbidden_tool": False},
        "looked like a normal end": {"stop": False, "no_forbidden_tool": True},
    }


def test_an_unknown_stop_class_is_refused() -> None:
    with pytest.raises(ValueError, match="stop must be one of"):
        StopAware(stop="finished")
