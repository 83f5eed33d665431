"""The public names of ``zett_agent``: exactly these, all importable."""

from __future__ import annotations

import importlib

import zett_agent

PUBLIC = [
    "Agent",
    "AgentClient",
    "AgentEvent",
    "AgentEventDispatcher",
    "AgentEventType",
    "AgentRunConfig",
    "AgentStopError",
    "ApprovalConflictError",
    "AssistantMessage",
    "AudioPart",
    "BackgroundTask",
    "BackgroundTasks",
    "CircuitBreaker",
    "ConfigError",
    "ContextCompaction",
    "ContextOverflowError",
    "ContinueWith",
    "ConvergenceGuard",
    "Cost",
    "DecodeError",
    "DocumentPart",
    "EndRun",
    "Extension",
    "FallbackModel",
    "Goal",
    "GoalVerdict",
    "ImagePart",
    "InMemorySessionStore",
    "MCPAuthorizationError",
    "MediaPart",
    "Message",
    "Model",
    "ModelAttempt",
    "ModelClient",
    "OutputLimitRecovery",
    "OutputRetry",
    "OutputValidationError",
    "PartTooLargeError",
    "ProviderError",
    "ProviderHTTPError",
    "RateLimitError",
    "Recovery",
    "RecoveryContext",
    "RecoveryRecord",
    "RefusalFallback",
    "RefusalReplay",
    "RefusalReplayExtension",
    "ResumeError",
    "RetryRequest",
    "SQLiteSessionStore",
    "ServerTool",
    "SessionStore",
    "SessionStoreError",
    "StopInfo",
    "StopReason",
    "StreamError",
    "SubAgent",
    "SubAgentResult",
    "SystemMessage",
    "TaskStatus",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolResultMessage",
    "TransportError",
    "Usage",
    "UserMessage",
    "ZettError",
    "create_agent",
    "create_agent_sync",
    "part_from_file",
    "resolve_model",
]

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


def test_all_is_exactly_the_public_names() -> None:
    assert zett_agent.__all__ == PUBLIC
    assert len(set(PUBLIC)) == len(PUBLIC)


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
    from zett_agent.extensions.refusal_replay import RefusalReplay, RefusalReplayExtension

    assert RefusalReplay is zett_agent.RefusalReplay
    assert RefusalReplayExtension is zett_agent.RefusalReplayExtension


def test_agent_resume_and_pause_budget() -> None:
    assert callable(zett_agent.Agent.resume)
    assert zett_agent.Agent.max_pause_continuations == 5


def test_the_loop_names_stay_importable_from_agent() -> None:
    from zett_agent.agent import MAX_TURNS_RAW, Agent, AgentRunConfig, Step, create_agent
    from zett_agent.loop import Step as LoopStep

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
