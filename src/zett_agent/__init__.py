"""zett-agent: an agent runtime whose host always knows why the model stopped.

The public names are imported when first used (PEP 562), so ``import zett_agent``
imports no HTTP client, pydantic or storage engine, and ``from zett_agent import
Model`` imports what a model needs, not the sessions, subagents or CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zett_agent._lazy import lazy_exports

if TYPE_CHECKING:
    from zett_agent._agent import Agent, AgentRunConfig, create_agent, create_agent_sync
    from zett_agent._background import BackgroundTask, BackgroundTasks, TaskStatus
    from zett_agent._client import AgentClient
    from zett_agent._events import AgentEvent, AgentEventDispatcher, AgentEventType
    from zett_agent._exchange import ModelRequest, ModelResponse
    from zett_agent._goals import Goal, GoalVerdict
    from zett_agent._guardrails import Guardrail, Tripwire
    from zett_agent._messages import (
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
    from zett_agent._output import OutputRetry
    from zett_agent._parts import (
        AudioPart,
        DocumentPart,
        ImagePart,
        MediaPart,
        TextPart,
        part_from_file,
    )
    from zett_agent._recovery import (
        ContinueWith,
        EndRun,
        Recovery,
        RecoveryContext,
        RecoveryRecord,
        RetryRequest,
    )
    from zett_agent._subagents import SubAgent, SubAgentResult
    from zett_agent.errors import (
        ConfigError,
        ContextOverflowError,
        DecodeError,
        HistoryError,
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
    from zett_agent.extensions._compaction import ContextCompaction
    from zett_agent.extensions._convergence import ConvergenceGuard
    from zett_agent.extensions._extension import Extension
    from zett_agent.extensions._fallback import RefusalFallback
    from zett_agent.extensions._output_limit import OutputLimitRecovery
    from zett_agent.extensions._refusal_replay import RefusalReplay, RefusalReplayExtension
    from zett_agent.model._fallback import CircuitBreaker, FallbackModel
    from zett_agent.model._model import Model, ModelClient, resolve_model
    from zett_agent.sessions import InMemorySessionStore, SessionStore, SQLiteSessionStore
    from zett_agent.stop import AgentStopError, StopInfo, StopReason
    from zett_agent.tools import Tool
    from zett_agent.tools._approvals import ApprovalConflictError
    from zett_agent.vendors import ServerTool

_EXPORTS: dict[str, str] = {
    "Agent": "zett_agent._agent",
    "AgentClient": "zett_agent._client",
    "AgentEvent": "zett_agent._events",
    "AgentEventDispatcher": "zett_agent._events",
    "AgentEventType": "zett_agent._events",
    "AgentRunConfig": "zett_agent._agent",
    "AgentStopError": "zett_agent.stop",
    "ApprovalConflictError": "zett_agent.tools._approvals",
    "AssistantMessage": "zett_agent._messages",
    "AudioPart": "zett_agent._parts",
    "BackgroundTask": "zett_agent._background",
    "BackgroundTasks": "zett_agent._background",
    "CircuitBreaker": "zett_agent.model._fallback",
    "ConfigError": "zett_agent.errors",
    "ContextCompaction": "zett_agent.extensions._compaction",
    "ContextOverflowError": "zett_agent.errors",
    "ContinueWith": "zett_agent._recovery",
    "ConvergenceGuard": "zett_agent.extensions._convergence",
    "Cost": "zett_agent._messages",
    "DecodeError": "zett_agent.errors",
    "DocumentPart": "zett_agent._parts",
    "EndRun": "zett_agent._recovery",
    "Extension": "zett_agent.extensions",
    "FallbackModel": "zett_agent.model._fallback",
    "Goal": "zett_agent._goals",
    "GoalVerdict": "zett_agent._goals",
    "Guardrail": "zett_agent._guardrails",
    "ImagePart": "zett_agent._parts",
    "InMemorySessionStore": "zett_agent.sessions",
    "MCPAuthorizationError": "zett_agent.errors",
    "MediaPart": "zett_agent._parts",
    "Message": "zett_agent._messages",
    "Model": "zett_agent.model._model",
    "ModelRequest": "zett_agent._exchange",
    "ModelResponse": "zett_agent._exchange",
    "ModelAttempt": "zett_agent._messages",
    "ModelClient": "zett_agent.model._model",
    "OutputLimitRecovery": "zett_agent.extensions._output_limit",
    "PartTooLargeError": "zett_agent.errors",
    "OutputRetry": "zett_agent._output",
    "OutputValidationError": "zett_agent.errors",
    "ProviderError": "zett_agent.errors",
    "ProviderHTTPError": "zett_agent.errors",
    "RateLimitError": "zett_agent.errors",
    "Recovery": "zett_agent._recovery",
    "RecoveryContext": "zett_agent._recovery",
    "RecoveryRecord": "zett_agent._recovery",
    "RefusalFallback": "zett_agent.extensions._fallback",
    "RefusalReplay": "zett_agent.extensions._refusal_replay",
    "RefusalReplayExtension": "zett_agent.extensions._refusal_replay",
    "ResumeError": "zett_agent.errors",
    "HistoryError": "zett_agent.errors",
    "Tripwire": "zett_agent._guardrails",
    "RetryRequest": "zett_agent._recovery",
    "SQLiteSessionStore": "zett_agent.sessions",
    "ServerTool": "zett_agent.vendors",
    "SessionStore": "zett_agent.sessions",
    "SessionStoreError": "zett_agent.errors",
    "StopInfo": "zett_agent.stop",
    "StopReason": "zett_agent.stop",
    "StreamError": "zett_agent.errors",
    "SubAgent": "zett_agent._subagents",
    "SubAgentResult": "zett_agent._subagents",
    "SystemMessage": "zett_agent._messages",
    "TaskStatus": "zett_agent._background",
    "TextPart": "zett_agent._parts",
    "Tool": "zett_agent.tools",
    "ToolCall": "zett_agent._messages",
    "ToolResultMessage": "zett_agent._messages",
    "TransportError": "zett_agent.errors",
    "Usage": "zett_agent._messages",
    "UserMessage": "zett_agent._messages",
    "ZettError": "zett_agent.errors",
    "create_agent": "zett_agent._agent",
    "part_from_file": "zett_agent._parts",
    "create_agent_sync": "zett_agent._agent",
    "resolve_model": "zett_agent.model._model",
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
    "Guardrail",
    "HistoryError",
    "ImagePart",
    "InMemorySessionStore",
    "MCPAuthorizationError",
    "MediaPart",
    "Message",
    "Model",
    "ModelAttempt",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
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
    "Tripwire",
    "Usage",
    "UserMessage",
    "ZettError",
    "create_agent",
    "create_agent_sync",
    "part_from_file",
    "resolve_model",
]


__getattr__, __dir__ = lazy_exports("zett_agent", _EXPORTS, globals())
