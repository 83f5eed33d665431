"""The base class of extensions: every hook does nothing unless overridden."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from zett_agent._recovery import RecoveryContext

__all__ = ["Extension"]


class Extension:
    """Base class of agent extensions; every hook does nothing by default."""

    def before_model(self, request: ModelRequest) -> Any:
        """Return a changed request, or None to keep it."""
        return None

    def after_model(self, response: ModelResponse) -> Any:
        """Observe a model response (``response.stop`` is None for a normal end)."""
        return None

    def before_tool(self, call: ToolCall) -> Any:
        """Return a ToolResultMessage to answer ``call`` without running the tool."""
        return None

    def after_tool(self, call: ToolCall, result: ToolResultMessage) -> Any:
        """Return a replacement ToolResultMessage, or None to keep ``result``."""
        return None

    def pending_messages(self) -> Any:
        """Return messages to add to the conversation before the next model call."""
        return None

    def on_complete(self, message: AssistantMessage, messages: Sequence[Message]) -> Any:
        """Return a reason (str) to veto completion and run another turn. Called
        after a normal end and after OTHER (which carries on); not after another
        abnormal stop."""
        return None

    def recover(self, context: RecoveryContext) -> Any:
        """Return a Recovery (RetryRequest, ContinueWith, EndRun) to act on this
        model call, or None to leave it to the next extension and the loop."""
        return None
