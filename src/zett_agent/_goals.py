"""Goals: a condition checked after each answer; while it is unmet the model keeps working.

Seed 001, "Subagents and goals": *a goal is not evaluated against a refused or
interrupted answer. Asking the model to try again would only meet the same
refusal, so the request ends and the host hears why.* :class:`Goal` is an
:class:`~zett_agent.extensions.Extension` whose ``on_complete`` stop hook does
the check, and the loop calls that hook only after a normal end: after a
refusal, an interruption, a full context or max turns the run ends with that
``stop`` on its message and the goal is not evaluated.

Shapes::

    goal = Goal("The answer cites a source", check=lambda message, messages: "http" in message.text)
    goal = Goal("The answer is in French", judge=judge_model)  # any ModelClient
    agent = await create_agent(model, extensions=[goal])
    message = await agent.run("...")
    goal.met, goal.attempts, goal.exhausted, goal.verdicts

``check(message, messages)`` gets the final :class:`AssistantMessage` and the
run's messages; it may be sync or async and returns ``bool`` or ``(bool, reason)``.
A ``judge`` model is asked a yes/no question (the goal and the answer's text) and
must answer ``YES`` or ``NO`` first; anything else counts as NO, with its text
as the reason. A judge that stops abnormally or fails with a provider error
leaves the goal undecided (``met is None``): the run completes rather than loop.

Attempts: each evaluated answer is one attempt. While the goal is unmet and
fewer than ``max_attempts`` answers were evaluated in this run, completion is
vetoed and the model gets a user message naming the goal and why it is unmet
(the loop stores it in history; ``max_turns`` still bounds the run). When the
attempts run out the run completes with the last answer: ``goal.met`` is False,
``goal.exhausted`` True, and a warning goes to the ``zett_agent._goals`` logger.

A new run starts a new count. A run is recognized as continuing when the last
user message in it is the goal's own request to keep working; ``reset()``
starts over by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TypeAlias

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import AssistantMessage, Message, SystemMessage, UserMessage
from zett_agent.errors import ProviderError, TransportError
from zett_agent.extensions._extension import Extension
from zett_agent.model._model import ModelClient
from zett_agent.stop import StopInfo

__all__ = ["Goal", "GoalCheck", "GoalVerdict"]

log = logging.getLogger("zett_agent.goals")

CheckResult: TypeAlias = bool | tuple[bool, str]
GoalCheck: TypeAlias = Callable[
    [AssistantMessage, Sequence[Message]], CheckResult | Awaitable[CheckResult]
]

JUDGE_INSTRUCTIONS = (
    "You check whether an answer meets a goal. Reply YES or NO on the first line, "
    "then one sentence saying why."
)


@dataclass(frozen=True)
class GoalVerdict:
    """One evaluation of a goal.

    Attributes:
        attempt: the number of the evaluated answer in its run (1-based).
        met: True or False; None when the judge could not decide.
        reason: why, as the check or the judge said.
        judge_stop: the judge's stop when it did not end normally.
    """

    attempt: int
    met: bool | None
    reason: str
    judge_stop: StopInfo | None = None


class Goal(Extension):
    """A condition checked after each normal answer (see the module docstring).

    Args:
        description: the goal in words; the model reads it when asked to go on.
        check: a predicate ``(message, messages) -> bool | (bool, reason)``.
        judge: a model asked whether the answer meets the goal (instead of ``check``).
        max_attempts: most answers evaluated per run (at least 1).
        judge_max_tokens: output limit of the judge's answer.
    """

    def __init__(
        self,
        description: str,
        check: GoalCheck | None = None,
        *,
        judge: ModelClient | None = None,
        max_attempts: int = 3,
        judge_max_tokens: int | None = 200,
    ) -> None:
        if (check is None) == (judge is None):
            raise ValueError("a Goal needs exactly one of check= or judge=")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.description = description
        self.check = check
        self.judge = judge
        self.max_attempts = max_attempts
        self.judge_max_tokens = judge_max_tokens
        self.verdicts: list[GoalVerdict] = []
        """Every evaluation, across runs, in order."""
        self.attempts = 0
        """Answers evaluated in the current (or last) run."""
        self._asked: UserMessage | None = None

    @property
    def met(self) -> bool | None:
        """The last verdict of the current run: None before any (or when undecided)."""
        return self.verdicts[-1].met if self.attempts else None

    @property
    def exhausted(self) -> bool:
        """Whether the run completed with the goal unmet because attempts ran out."""
        return self.met is False and self.attempts >= self.max_attempts

    def reset(self) -> None:
        """Start counting attempts again (a new run does this by itself)."""
        self.attempts = 0
        self._asked = None

    async def on_complete(
        self, message: AssistantMessage, messages: Sequence[Message]
    ) -> str | None:
        """Evaluate ``message``; return a request to keep working while the goal is unmet."""
        last_user = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        if self._asked is None or last_user != self._asked:
            self.reset()
        self.attempts += 1
        verdict = await self._evaluate(message, messages)
        self.verdicts.append(verdict)
        if verdict.met is not False:
            if verdict.met is None:
                log.warning("goal %r undecided: %s", self.description, verdict.reason)
            return None
        if self.attempts >= self.max_attempts:
            log.warning(
                "goal %r not met after %d attempts: %s",
                self.description,
                self.attempts,
                verdict.reason,
            )
            return None
        log.info(
            "goal %r not met (attempt %d): %s", self.description, self.attempts, verdict.reason
        )
        self._asked = UserMessage(
            f"The goal is not met yet: {self.description}\n"
            f"Why: {verdict.reason}\n"
            f"Keep working until it is met (attempt {self.attempts} of {self.max_attempts})."
        )
        return self._asked.content

    async def _evaluate(
        self, message: AssistantMessage, messages: Sequence[Message]
    ) -> GoalVerdict:
        if self.check is not None:
            value = await _maybe_await(self.check(message, messages))
            met, reason = value if isinstance(value, tuple) else (bool(value), "")
            if not reason:
                reason = "the check passed" if met else "the check did not pass"
            return GoalVerdict(self.attempts, bool(met), reason)
        return await self._ask_judge(message)

    async def _ask_judge(self, message: AssistantMessage) -> GoalVerdict:
        judge = self.judge
        assert judge is not None
        question = (
            f"Goal: {self.description}\n\nAnswer:\n{message.text}\n\n"
            "Does the answer meet the goal? Reply YES or NO first."
        )
        request = ModelRequest(
            model=judge.name,
            messages=[SystemMessage(JUDGE_INSTRUCTIONS), UserMessage(question)],
            max_tokens=self.judge_max_tokens,
        )
        response: ModelResponse | None = None
        try:
            async with aclosing(judge.stream(request)) as stream:
                async for item in stream:
                    if isinstance(item, ModelResponse):
                        response = item
        except (ProviderError, TransportError) as error:
            return GoalVerdict(self.attempts, None, f"the judge failed: {error}")
        assert response is not None, "a model stream must end with a ModelResponse"
        if response.stop is not None:
            reason = f"the judge stopped: {response.stop.describe()}"
            return GoalVerdict(self.attempts, None, reason, response.stop)
        text = response.text.strip()
        first = text.split(None, 1)[0].strip(".,:;!*").upper() if text else ""
        reason = text.split("\n", 1)[1].strip() if "\n" in text else text
        return GoalVerdict(self.attempts, first == "YES", reason or text or "no answer")
