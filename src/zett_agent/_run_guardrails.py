"""One run's guardrail decisions, for the loop (:mod:`zett_agent._loop`).

The guardrails themselves (checking them, the tripped answer and its stop) are
:mod:`zett_agent._guardrails`; this module is when a run checks them and what a
tripwire does to it:

=====================  =======================================================
decision               what :class:`RunGuardrails` does
=====================  =======================================================
what input is checked  :meth:`~RunGuardrails.arm`: the run's prompt, or the user
                       message a stored history ends with; nothing for a run
                       that brings no new input (an approval's continuation, a
                       resume)
when                   :meth:`~RunGuardrails.start`: beside the run's first model
                       call (its deltas held back in ``guard.held``); a durable
                       run awaits them before the call (its steps keep their
                       order on replay)
the input verdict      :meth:`~RunGuardrails.input_verdict`, before the first
                       answer is settled; a tripwire: :meth:`~RunGuardrails.trip_input`
                       makes the answer the run ends with
the output verdict     :meth:`~RunGuardrails.check_output`: on an answer that
                       would complete the run, before it is stored
the event              :meth:`~RunGuardrails.tripped_data`: GUARDRAIL_TRIPPED's data
=====================  =======================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zett_agent._guardrails import (
    GuardrailKind,
    InputGuard,
    Tripped,
    as_guardrails,
    checked,
    tripped_answer,
)
from zett_agent._messages import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from zett_agent._config import AgentRunConfig
    from zett_agent.model._budgets import RunBudget

__all__ = ["RunGuardrails"]


class RunGuardrails:
    """A run's input and output guardrails and what they decided.

    ``concurrent`` False (a durable run): guardrails check one after another, and
    the input guardrails are awaited before the first model call.
    """

    def __init__(self, config: AgentRunConfig, budget: RunBudget, *, concurrent: bool) -> None:
        self.input = as_guardrails(config.input_guardrails)
        self.output = as_guardrails(config.output_guardrails)
        self.budget = budget  # agents used as guardrails spend in the run's ledger
        self.concurrent = concurrent
        self.asked: UserMessage | None = None  # the input to check, until it starts
        self.guard: InputGuard | None = None  # input guardrails checking, deltas held
        self.tripped: tuple[Tripped, GuardrailKind] | None = None

    @property
    def checking(self) -> bool:
        """Whether the input guardrails were started and their verdict not yet taken."""
        return self.guard is not None

    def arm(self, messages: Sequence[Message], *, new_input: bool) -> None:
        """What the input guardrails will check: the user message the run's
        messages end with (its prompt, or the question a stored history ends
        with, as serve starts a run); nothing without ``new_input`` or without
        input guardrails."""
        if not self.input or not new_input:
            return
        last = messages[-1] if messages else None
        self.asked = last if isinstance(last, UserMessage) else None

    async def start(self) -> None:
        """The input guardrails, as a task beside the model call about to be made
        (not concurrent: awaited before it); once per run."""
        if self.asked is None:
            return
        asked, self.asked = self.asked, None
        self.guard = InputGuard(self.input, asked, self.budget, concurrent=self.concurrent)
        if not self.concurrent:
            await self.guard.wait()

    async def input_verdict(self) -> tuple[Tripped | None, list[Any]]:
        """The input guardrails' verdict (the first tripwire, or None) and the
        events held back while they checked (shown only when they passed)."""
        guard, self.guard = self.guard, None
        assert guard is not None
        return await guard.verdict(), guard.held

    def trip_input(self, message: AssistantMessage, tripped: Tripped) -> AssistantMessage:
        """The first answer, stopped by an input guardrail."""
        self.tripped = (tripped, "input")
        return tripped_answer(message, tripped, "input")

    async def check_output(self, message: AssistantMessage) -> AssistantMessage | None:
        """The output guardrails on an answer that would complete the run: None
        when they passed, else the tripped answer that replaces it."""
        if not self.output:
            return None
        tripped = await checked(self.output, message, self.budget, concurrent=self.concurrent)
        if tripped is None:
            return None
        self.tripped = (tripped, "output")
        return tripped_answer(message, tripped, "output")

    def tripped_data(self) -> dict[str, Any]:
        """GUARDRAIL_TRIPPED's data: the guardrail, its kind and its reason."""
        assert self.tripped is not None
        tripped, kind = self.tripped
        return {"guardrail": tripped.name, "kind": kind, "reason": tripped.reason}

    def cancel(self) -> None:
        """The input guardrails still checking, cancelled (the run ended)."""
        if self.guard is not None:
            self.guard.cancel()
