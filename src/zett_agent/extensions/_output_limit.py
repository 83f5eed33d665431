"""Recover an answer cut off at the output limit (MAX_OUTPUT), as Claude Code does.

::

    agent = await create_agent(model, extensions=[OutputLimitRecovery(max_tokens_ceiling=32_000)])

When a step stops as MAX_OUTPUT with no tool call:

1. the first time, the same request is sent again with ``max_tokens`` raised to
   ``max_tokens_ceiling`` (when it was lower, or unset);
2. after that, a user turn asking the model to continue exactly where it stopped
   is added and the model gets another turn (at the raised limit, if any);
3. at most ``max_recoveries`` times in a run (3); then MAX_OUTPUT is reported as
   usual.

Never for a cut-off tool call (the loop already answers it with an error result
and the model gets its turn again), never after REFUSAL or any other stop.

What is stored: the cut answer of step 1 stays in history as a recorded attempt
(its stop MAX_OUTPUT with ``detail["superseded"]`` and ``detail["recovery"]``
``{"by": "OutputLimitRecovery", "action": "retry", "max_tokens": N}``) and is
never sent again. Each piece continued in step 2 is stored as it came (stop
MAX_OUTPUT, ``detail["recovery"]["action"] == "continue"``), followed by the
continue turn, so later requests show the model exactly what it saw. The run's
final message (``run()``'s return, RUN_COMPLETED) joins the pieces into one
answer: the texts joined, usage summed, the last piece's stop (None once it
finished).
"""

from __future__ import annotations

from dataclasses import replace

from zett_agent._messages import UserMessage
from zett_agent._recovery import ContinueWith, RecoveryContext, RetryRequest
from zett_agent._resume import CONTINUE_PROMPT
from zett_agent.extensions._extension import Extension
from zett_agent.stop import StopReason

__all__ = ["OutputLimitRecovery"]


class OutputLimitRecovery(Extension):
    """Raise the output limit once, then ask the model to continue; bounded.

    Args:
        max_tokens_ceiling: the raised limit of the first retry; None: no retry,
            continue at once.
        max_recoveries: recoveries per run (the retry included).
        prompt: the continue turn.
    """

    def __init__(
        self,
        *,
        max_tokens_ceiling: int | None = 32_000,
        max_recoveries: int = 3,
        prompt: str = CONTINUE_PROMPT,
    ) -> None:
        self.max_tokens_ceiling = max_tokens_ceiling
        self.max_recoveries = max_recoveries
        self.prompt = prompt

    def recover(self, context: RecoveryContext) -> RetryRequest | ContinueWith | None:
        response = context.response
        if response is None or context.stop.reason is not StopReason.MAX_OUTPUT:
            return None
        if response.tool_calls or context.stop.detail.get("withheld_tool_calls"):
            return None  # a cut-off tool call: answered with an error by the loop
        made = context.made_by(self)
        if made >= self.max_recoveries:
            return None
        name = type(self).__name__
        raised = any(r.by == name and r.action == "retry" for r in context.recoveries)
        sent = context.request.max_tokens
        ceiling = self.max_tokens_ceiling
        if not raised and ceiling is not None and (sent is None or sent < ceiling):
            return RetryRequest(
                replace(context.request, max_tokens=ceiling),
                note={"attempt": made + 1, "max_tokens": ceiling},
            )
        return ContinueWith(
            [UserMessage(self.prompt)],
            join=True,
            max_tokens=sent,
            note={"attempt": made + 1},
        )
