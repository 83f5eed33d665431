"""zett-agent: an agent runtime whose host always knows why the model stopped."""

from zett_agent.errors import (
    ConfigError,
    DecodeError,
    ProviderError,
    ProviderHTTPError,
    StreamError,
    TransportError,
    ZettError,
)
from zett_agent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent.models import Model, resolve_model
from zett_agent.stop import AgentStopError, StopInfo, StopReason

__all__ = [
    "AgentStopError",
    "AssistantMessage",
    "ConfigError",
    "DecodeError",
    "Message",
    "Model",
    "ProviderError",
    "ProviderHTTPError",
    "StopInfo",
    "StopReason",
    "StreamError",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "TransportError",
    "Usage",
    "UserMessage",
    "ZettError",
    "resolve_model",
]
