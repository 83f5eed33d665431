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
  with no output): return a :data:`~zett_agent.Recovery` to work around
  it — ``RetryRequest(request, model=None)``, ``ContinueWith(messages)`` or
  ``EndRun(stop)`` — or None. The first extension that answers wins. See
  :mod:`zett_agent._recovery` for what the loop does and stores for each.

Recovery extensions that ship (each off unless added, each in a private module of
this package): OutputLimitRecovery (``_output_limit``), ContextCompaction
(``_compaction``), ConvergenceGuard (``_convergence``), RefusalFallback
(``_fallback``), and RefusalReplayExtension (``_refusal_replay``; also importable
from ``zett_agent.extensions.refusal_replay``, the seed guide's path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zett_agent._lazy import lazy_exports

if TYPE_CHECKING:
    from zett_agent._recovery import (
        ContinueWith,
        EndRun,
        Recovery,
        RecoveryContext,
        RecoveryRecord,
        RetryRequest,
    )
    from zett_agent.extensions._compaction import ContextCompaction
    from zett_agent.extensions._convergence import ConvergenceGuard
    from zett_agent.extensions._extension import Extension
    from zett_agent.extensions._fallback import RefusalFallback
    from zett_agent.extensions._output_limit import OutputLimitRecovery
    from zett_agent.extensions._refusal_replay import RefusalReplay, RefusalReplayExtension

_EXPORTS: dict[str, str] = {
    "ContextCompaction": "zett_agent.extensions._compaction",
    "ContinueWith": "zett_agent._recovery",
    "ConvergenceGuard": "zett_agent.extensions._convergence",
    "EndRun": "zett_agent._recovery",
    "Extension": "zett_agent.extensions._extension",
    "OutputLimitRecovery": "zett_agent.extensions._output_limit",
    "Recovery": "zett_agent._recovery",
    "RecoveryContext": "zett_agent._recovery",
    "RecoveryRecord": "zett_agent._recovery",
    "RefusalFallback": "zett_agent.extensions._fallback",
    "RefusalReplay": "zett_agent.extensions._refusal_replay",
    "RefusalReplayExtension": "zett_agent.extensions._refusal_replay",
    "RetryRequest": "zett_agent._recovery",
}

__all__ = [
    "ContextCompaction",
    "ContinueWith",
    "ConvergenceGuard",
    "EndRun",
    "Extension",
    "OutputLimitRecovery",
    "Recovery",
    "RecoveryContext",
    "RecoveryRecord",
    "RefusalFallback",
    "RefusalReplay",
    "RefusalReplayExtension",
    "RetryRequest",
]


__getattr__, __dir__ = lazy_exports("zett_agent.extensions", _EXPORTS, globals())
