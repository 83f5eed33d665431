"""Extensions: hooks a host adds to an agent. Off unless added.

Subclass :class:`Extension` and override what you need; every hook may be a
plain or an ``async`` method:

* ``before_model(request)`` — may return a changed :class:`ModelRequest`. Only the
  outgoing request changes; the stored history is never rewritten.
* ``after_model(response)`` — sees the :class:`ModelResponse` as the runtime
  decided it (``response.stop`` is the value stored on the message).
* ``before_tool(call)`` — may return a :class:`ToolResultMessage` to answer the
  call without running the tool.
* ``after_tool(call, result)`` — may return a replacement result.
* ``pending_messages()`` — messages to add to the conversation before the next
  model call (e.g. a background task's completion notice). They are stored in
  history like any other message, so sessions keep them.
* ``on_complete(message, messages)`` — a stop hook: return a reason (str) to
  veto completion; the reason is sent to the model as a user message and the
  run goes on (bounded by max_turns). Called when the run would complete: after
  a normal end, and after OTHER, which carries on like one (seed 001); not after
  REFUSAL, INTERRUPTED, MAX_OUTPUT, CONTEXT_FULL or PAUSED running out.
* ``recover(context)`` — after every model call (a response, or an exception
  with no output): return a :data:`~zett_agent.recovery.Recovery` to work around
  it — ``RetryRequest(request, model=None)``, ``ContinueWith(messages)`` or
  ``EndRun(stop)`` — or None. The first extension that answers wins. See
  :mod:`zett_agent.recovery` for what the loop does and stores for each.

Recovery extensions that ship (each off unless added): ``output_limit``
(OutputLimitRecovery), ``compaction`` (ContextCompaction), ``convergence``
(ConvergenceGuard), ``fallback`` (RefusalFallback), and ``refusal_replay``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zett_agent.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from zett_agent.protocols.base import ModelRequest, ModelResponse
from zett_agent.recovery import (
    ContinueWith,
    EndRun,
    Recovery,
    RecoveryContext,
    RecoveryRecord,
    RetryRequest,
)

__all__ = [
    "ContinueWith",
    "EndRun",
    "Extension",
    "Recovery",
    "RecoveryContext",
    "RecoveryRecord",
    "RetryRequest",
]


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
