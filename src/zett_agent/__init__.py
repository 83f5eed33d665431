"""zett-agent: an agent runtime whose host always knows why the model stopped."""

from zett_agent.agent import Agent, AgentRunConfig, create_agent
from zett_agent.background import BackgroundTask, BackgroundTasks, TaskStatus
from zett_agent.client import AgentClient
from zett_agent.errors import (
    ConfigError,
    ContextOverflowError,
    DecodeError,
    ProviderError,
    ProviderHTTPError,
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
from zett_agent.goals import Goal, GoalVerdict
from zett_agent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent.models import Model, ModelClient, resolve_model
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

__all__ = [
    "Agent",
    "AgentClient",
    "AgentEvent",
    "AgentEventDispatcher",
    "AgentEventType",
    "AgentRunConfig",
    "AgentStopError",
    "AssistantMessage",
    "BackgroundTask",
    "BackgroundTasks",
    "ConfigError",
    "ContextCompaction",
    "ContextOverflowError",
    "ContinueWith",
    "ConvergenceGuard",
    "DecodeError",
    "EndRun",
    "Extension",
    "Goal",
    "GoalVerdict",
    "InMemorySessionStore",
    "Message",
    "Model",
    "ModelClient",
    "OutputLimitRecovery",
    "ProviderError",
    "ProviderHTTPError",
    "Recovery",
    "RecoveryContext",
    "RecoveryRecord",
    "RefusalFallback",
    "RefusalReplay",
    "RefusalReplayExtension",
    "ResumeError",
    "RetryRequest",
    "SQLiteSessionStore",
    "SessionStore",
    "SessionStoreError",
    "StopInfo",
    "StopReason",
    "StreamError",
    "SubAgent",
    "SubAgentResult",
    "SystemMessage",
    "TaskStatus",
    "Tool",
    "ToolCall",
    "ToolResultMessage",
    "TransportError",
    "Usage",
    "UserMessage",
    "ZettError",
    "create_agent",
    "resolve_model",
]
