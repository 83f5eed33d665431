"""End a run that repeats itself instead of letting it spin to ``max_turns``.

::

    agent = await create_agent(model, extensions=[ConvergenceGuard()])

Two kinds of repetition, counted over consecutive answers of one run (recorded
attempts a retry superseded are skipped):

* the same tool calls (names and arguments, compared as parsed JSON) in
  ``tool_repeats`` answers in a row (3);
* near-identical text in ``text_repeats`` answers in a row with no tool call (2):
  lower-cased, whitespace-collapsed texts of at least ``min_text_chars``
  characters whose :class:`difflib.SequenceMatcher` ratio is at least
  ``similarity`` (0.9). This catches a model answering the same thing again when
  a stop hook (a goal) keeps sending it back.

The run then ends: the repeating answer is stored with stop OTHER, ``raw`` and
``category`` ``"convergence"``, a ``message`` saying what repeated, and
``detail["repeated"]`` (``"tool_calls"`` or ``"text"``), ``detail["count"]`` and
``detail["tool_calls"]`` (names) or ``detail["similarity"]``. Its tool calls are
withheld (never run; names in ``detail["withheld_tool_calls"]``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from itertools import pairwise

from zett_agent._messages import AssistantMessage, ToolCall
from zett_agent._recovery import EndRun, RecoveryContext, is_superseded
from zett_agent.extensions._extension import Extension
from zett_agent.stop import StopInfo, StopReason

__all__ = ["CONVERGENCE_RAW", "ConvergenceGuard"]

CONVERGENCE_RAW = "convergence"

Signature = tuple[tuple[str, str], ...]


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        return arguments


def _signature(calls: Sequence[ToolCall]) -> Signature:
    return tuple(sorted((call.name, _canonical(call.arguments)) for call in calls))


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


def _similarity(a: str, b: str, threshold: float) -> float:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
        return 0.0
    return matcher.ratio()


class ConvergenceGuard(Extension):
    """End the run when consecutive steps repeat (see the module docstring)."""

    def __init__(
        self,
        *,
        tool_repeats: int = 3,
        text_repeats: int = 2,
        similarity: float = 0.9,
        min_text_chars: int = 20,
    ) -> None:
        if tool_repeats < 2 or text_repeats < 2:
            raise ValueError("a repetition needs at least 2 answers")
        self.tool_repeats = tool_repeats
        self.text_repeats = text_repeats
        self.similarity = similarity
        self.min_text_chars = min_text_chars

    def recover(self, context: RecoveryContext) -> EndRun | None:
        response = context.response
        if response is None:
            return None
        current = AssistantMessage(response.text, response.tool_calls)
        depth = max(self.tool_repeats, self.text_repeats) - 1
        answers = [*self._previous(context.run_messages, depth), current]
        return self._repeated_calls(answers) or self._repeated_text(answers)

    @staticmethod
    def _previous(messages: Sequence[object], depth: int) -> list[AssistantMessage]:
        found: list[AssistantMessage] = []
        for message in reversed(messages):
            if len(found) >= depth:
                break
            if isinstance(message, AssistantMessage) and not is_superseded(message):
                found.append(message)
        return found[::-1]

    def _repeated_calls(self, answers: list[AssistantMessage]) -> EndRun | None:
        window = answers[-self.tool_repeats :]
        if len(window) < self.tool_repeats or not window[-1].tool_calls:
            return None
        signature = _signature(window[-1].tool_calls)
        if any(_signature(answer.tool_calls) != signature for answer in window[:-1]):
            return None
        shown = ", ".join(f"{name}({arguments})" for name, arguments in signature)
        count = self.tool_repeats
        return EndRun(
            StopInfo(
                StopReason.OTHER,
                raw=CONVERGENCE_RAW,
                category=CONVERGENCE_RAW,
                message=f"The model made the same tool calls {count} times in a row: {shown}.",
                detail={
                    "repeated": "tool_calls",
                    "count": count,
                    "tool_calls": [name for name, _ in signature],
                },
            )
        )

    def _repeated_text(self, answers: list[AssistantMessage]) -> EndRun | None:
        window = answers[-self.text_repeats :]
        if len(window) < self.text_repeats or any(answer.tool_calls for answer in window):
            return None
        texts = [_normalized(answer.text) for answer in window]
        if any(len(text) < self.min_text_chars for text in texts):
            return None
        lowest = 1.0
        for a, b in pairwise(texts):
            ratio = 1.0 if a == b else _similarity(a, b, self.similarity)
            if ratio < self.similarity:
                return None
            lowest = min(lowest, ratio)
        count = self.text_repeats
        return EndRun(
            StopInfo(
                StopReason.OTHER,
                raw=CONVERGENCE_RAW,
                category=CONVERGENCE_RAW,
                message=f"The model gave the same answer {count} times in a row.",
                detail={"repeated": "text", "count": count, "similarity": round(lowest, 3)},
            )
        )
