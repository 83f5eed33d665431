"""zett-agent: an agent runtime whose host always knows why the model stopped.

The public names are imported when first used (PEP 562), so ``import zett_agent``
imports no HTTP client, pydantic or storage engine, and ``from zett_agent import
Model`` imports what a model needs, not the sessions, subagents or CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zett_agent.agent import Agent, AgentRunConfig, create_agent, create_agent_sync
    from zett_agent.background import BackgroundTask, BackgroundTasks, TaskStatus
    from zett_agent.client import AgentClient
    from zett_agent.errors import (
        ConfigError,
        ContextOverflowError,
        DecodeError,
        MCPAuthorizationError,
        OutputValidationError,
        PartTooLargeError,
        ProviderError,
        ProviderHTTPError,
        RateLimitError,
        ResumeError,
        SessionStoreError,
        StreamError,
        TransportError,
        ZettError,
    )
    from zett_agent.events import AgentEvent, AgentEventDispatcher, AgentEventType
    from zett_agent.extensions import Extension
    from zett_agent.extensions.compaction import ContextCompaction
    from zett_agent.extensions.convergence import ConvergenceGuard
    from zett_agent.extensions.fallback import RefusalFallback
    from zett_agent.extensions.output_limit import OutputLimitRecovery
    from zett_agent.extensions.refusal_replay import RefusalReplay, RefusalReplayExtension
    from zett_agent.fallback import CircuitBreaker, FallbackModel
    from zett_agent.goals import Goal, GoalVerdict
    from zett_agent.messages import (
        AssistantMessage,
        Cost,
        Message,
        ModelAttempt,
        SystemMessage,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )
    from zett_agent.models import Model, ModelClient, resolve_model
    from zett_agent.output import OutputRetry
    from zett_agent.parts import (
        AudioPart,
        DocumentPart,
        ImagePart,
        MediaPart,
        TextPart,
        part_from_file,
    )
    from zett_agent.recovery import (
        ContinueWith,
        EndRun,
        Recovery,
        RecoveryContext,
        RecoveryRecord,
        RetryRequest,
    )
    from zett_agent.sessions import InMemorySessionStore, SessionStore, SQLiteSessionStore
    from zett_agent.stop import AgentStopError, StopInfo, StopReason
    from zett_agent.subagents import SubAgent, SubAgentResult
    from zett_agent.tools import Tool
    from zett_agent.tools.approvals import ApprovalConflictError
    from zett_agent.vendors import ServerTool

_EXPORTS: dict[str, str] = {
    "Agent": "zett_agent.agent",
    "AgentClient": "zett_agent.client",
    "AgentEvent": "zett_agent.events",
    "AgentEventDispatcher": "zett_agent.events",
    "AgentEventType": "zett_agent.events",
    "AgentRunConfig": "zett_agent.agent",
    "AgentStopError": "zett_agent.stop",
    "ApprovalConflictError": "zett_agent.tools.approvals",
    "AssistantMessage": "zett_agent.messages",
    "AudioPart": "zett_agent.parts",
    "BackgroundTask": "zett_agent.background",
    "BackgroundTasks": "zett_agent.background",
    "CircuitBreaker": "zett_agent.fallback",
    "ConfigError": "zett_agent.errors",
    "ContextCompaction": "zett_agent.extensions.compaction",
    "ContextOverflowError": "zett_agent.errors",
    "ContinueWith": "zett_agent.recovery",
    "ConvergenceGuard": "zett_agent.extensions.convergence",
    "Cost": "zett_agent.messages",
    "DecodeError": "zett_agent.errors",
    "DocumentPart": "zett_agent.parts",
    "EndRun": "zett_agent.recovery",
    "Extension": "zett_agent.extensions",
    "FallbackModel": "zett_agent.fallback",
    "Goal": "zett_agent.goals",
    "GoalVerdict": "zett_agent.goals",
    "ImagePart": "zett_agent.parts",
    "InMemorySessionStore": "zett_agent.sessions",
    "MCPAuthorizationError": "zett_agent.errors",
    "MediaPart": "zett_agent.parts",
    "Message": "zett_agent.messages",
    "Model": "zett_agent.models",
    "ModelAttempt": "zett_agent.messages",
    "ModelClient": "zett_agent.models",
    "OutputLimitRecovery": "zett_agent.extensions.output_limit",
    "PartTooLargeError": "zett_agent.errors",
    "OutputRetry": "zett_agent.output",
    "OutputValidationError": "zett_agent.errors",
    "ProviderError": "zett_agent.errors",
    "ProviderHTTPError": "zett_agent.errors",
    "RateLimitError": "zett_agent.errors",
    "Recovery": "zett_agent.recovery",
    "RecoveryContext": "zett_agent.recovery",
    "RecoveryRecord": "zett_agent.recovery",
    "RefusalFallback": "zett_agent.extensions.fallback",
    "RefusalReplay": "zett_agent.extensions.refusal_replay",
    "RefusalReplayExtension": "zett_agent.extensions.refusal_replay",
    "ResumeError": "zett_agent.errors",
    "RetryRequest": "zett_agent.recovery",
    "SQLiteSessionStore": "zett_agent.sessions",
    "ServerTool": "zett_agent.vendors",
    "SessionStore": "zett_agent.sessions",
    "SessionStoreError": "zett_agent.errors",
    "StopInfo": "zett_agent.stop",
    "StopReason": "zett_agent.stop",
    "StreamError": "zett_agent.errors",
    "SubAgent": "zett_agent.subagents",
    "SubAgentResult": "zett_agent.subagents",
    "SystemMessage": "zett_agent.messages",
    "TaskStatus": "zett_agent.background",
    "TextPart": "zett_agent.parts",
    "Tool": "zett_agent.tools",
    "ToolCall": "zett_agent.messages",
    "ToolResultMessage": "zett_agent.messages",
    "TransportError": "zett_agent.errors",
    "Usage": "zett_agent.messages",
    "UserMessage": "zett_agent.messages",
    "ZettError": "zett_agent.errors",
    "create_agent": "zett_agent.agent",
    "part_from_file": "zett_agent.parts",
    "create_agent_sync": "zett_agent.agent",
    "resolve_model": "zett_agent.models",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zett_agent' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
