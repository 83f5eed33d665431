"""The public names of ``zett_agent``: exactly these, all importable."""

from __future__ import annotations

import importlib

import zett_agent

SEED_001 = [
    "create_agent",
    "AgentRunConfig",
    "StopInfo",
    "StopReason",
    "AgentStopError",
    "AgentEventType",
    "AgentEventDispatcher",
    "SubAgentResult",
    "AssistantMessage",
]


def test_the_lazy_table_the_type_checker_imports_and_all_agree() -> None:
    """``__init__`` names each public name three times (``_EXPORTS`` for PEP 562,
    ``__all__``, the ``TYPE_CHECKING`` imports for type checkers): the same set, each
    from the module the table names. ``tests/public_surface.txt`` pins the set."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(zett_agent.__file__).read_text())
    checked: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                for alias in statement.names:
                    checked[alias.name] = str(statement.module)
    exports = zett_agent._EXPORTS
    assert sorted(exports) == sorted(zett_agent.__all__) == sorted(checked)
    for name, module in exports.items():
        assert getattr(importlib.import_module(module), name) is getattr(zett_agent, name)


def test_every_public_name_is_importable() -> None:
    module = importlib.import_module("zett_agent")
    for name in zett_agent.__all__:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec(f"from zett_agent import {', '.join(zett_agent.__all__)}", namespace)
    assert set(zett_agent.__all__) <= set(namespace)


def test_seed_001_names_exist() -> None:
    for name in SEED_001:
        assert name in zett_agent.__all__, name
        assert hasattr(zett_agent, name), name
    from zett_agent.extensions import RefusalReplay, RefusalReplayExtension

    assert RefusalReplay is zett_agent.RefusalReplay
    assert RefusalReplayExtension is zett_agent.RefusalReplayExtension


def test_agent_resume_and_pause_budget() -> None:
    assert callable(zett_agent.Agent.resume)
    assert zett_agent.Agent.max_pause_continuations == 5


def test_the_loop_names_stay_importable_from_agent() -> None:
    from zett_agent._agent import MAX_TURNS_RAW, Agent, AgentRunConfig, Step, create_agent
    from zett_agent._loop import Step as LoopStep

    assert Agent is zett_agent.Agent
    assert AgentRunConfig is zett_agent.AgentRunConfig
    assert create_agent is zett_agent.create_agent
    assert Step is LoopStep
    assert {step.value for step in Step} == {
        "run_tools",
        "continue",
        "complete",
        "end",
        "retry",
        "retry_output",
    }
    assert MAX_TURNS_RAW == "max_turns"
