"""Guardrails: host checks of a run's input and output whose tripwire is a stop.

``AgentRunConfig(input_guardrails=[...], output_guardrails=[...])``: each item is
a sync or async callable, an agent, or a :class:`Guardrail` naming one. A check
returns None (or True) to pass, or a :class:`Tripwire` (or False) to stop the run:

==================  ===========================================================
input guardrails    given the run's input: its prompt, or the user message a
                    stored history ends with (``zett serve`` stores the question
                    first), a :class:`~zett_agent.UserMessage` (an agent gets
                    its text). They start with the run's first model call and
                    run concurrently with it and with each other; no tool call
                    of that answer starts, and the answer is not the run's
                    result, before every input guardrail has passed. A run that
                    brings no new input (an approval's continuation, a resume)
                    has none to check: none runs. The deltas the model streams
                    meanwhile are held back: shown once every input guardrail
                    passed, never when one tripped.
output guardrails   given the answer that would end the run normally (an
                    :class:`~zett_agent.AssistantMessage`: ``text``, and
                    ``output`` for a typed run, after ``output_validators``;
                    an agent gets the text, or the output's JSON). They run
                    before the stop hooks (``Extension.on_complete``) and before
                    the answer is stored.
==================  ===========================================================

A tripwire ends the run with the stored answer's stop
``StopInfo(REFUSAL, raw="guardrail:<name>", category="guardrail", message=<reason>,
detail={"guardrail": name, "kind": "input" | "output", "model_stop": <the model's
own stop as a dict, or None>})`` (seed 001: REFUSAL covers "a safety system in
front of" the model). The tripped answer holds no text, no tool calls (their names
are in ``detail["withheld_tool_calls"]``) and no output; its usage and cost are
kept. The stop is final: no recovery, fallback, goal or retry acts on it.

A check that raises fails closed: a tripwire whose reason says it raised. An
agent used as a guardrail trips when its answer's ``output`` is a
:class:`Tripwire` (or has ``tripped`` true and a ``reason``), or when it did not
end normally (a refusal of the guardrail model is a tripwire too); its spend is
counted in the run's ledger (:mod:`zett_agent.model._budgets`).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

from zett_agent._await import maybe_await as _maybe_await
from zett_agent.model._budgets import CURRENT_LEDGER
from zett_agent.stop import StopInfo, StopReason

if TYPE_CHECKING:
    from zett_agent._messages import AssistantMessage
    from zett_agent.model._budgets import RunBudget

__all__ = [
    "GUARDRAIL_CATEGORY",
    "Guardrail",
    "GuardrailCheck",
    "GuardrailKind",
    "InputGuard",
    "Tripped",
    "Tripwire",
    "as_guardrails",
    "check_all",
    "checked",
    "tripped_answer",
    "tripwire_stop",
]

GUARDRAIL_CATEGORY = "guardrail"
"""``StopInfo.category`` of a guardrail's tripwire."""

GuardrailKind: TypeAlias = Literal["input", "output"]


@dataclass(frozen=True)
class Tripwire:
    """What a guardrail returns to stop the run; ``reason`` becomes ``stop.message``."""

    reason: str


GuardrailCheck: TypeAlias = Callable[[Any], "Tripwire | bool | Awaitable[Any] | None"]


@dataclass(frozen=True)
class Guardrail:
    """A check with a name (``raw`` is ``"guardrail:<name>"``).

    ``check``: a sync or async callable given the input (a UserMessage) or the
    answer (an AssistantMessage), or an agent (anything with an async
    ``run(prompt)``). ``name`` defaults to the function's ``__name__`` (an
    agent's ``config.name``)."""

    check: Any
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", _name_of(self.check))


@dataclass(frozen=True)
class Tripped:
    """A guardrail that tripped: its name and reason."""

    name: str
    reason: str


def _name_of(check: Any) -> str:
    config = getattr(check, "config", None)
    if config is not None and isinstance(getattr(config, "name", None), str):
        return str(config.name)
    return str(getattr(check, "__name__", None) or type(check).__name__)


def as_guardrails(items: Sequence[Any]) -> tuple[Guardrail, ...]:
    """``items`` as :class:`Guardrail` values (a Guardrail stays as it is)."""
    return tuple(item if isinstance(item, Guardrail) else Guardrail(item) for item in items)


def _is_agent(check: Any) -> bool:
    return hasattr(check, "run") and hasattr(check, "config") and hasattr(check, "model")


def _agent_prompt(value: Any) -> str:
    output = getattr(value, "output", None)
    if output is not None:
        dump = getattr(output, "model_dump", None)
        return json.dumps(dump(mode="json") if callable(dump) else output, default=str)
    text = getattr(value, "content", None)
    if not isinstance(text, str):
        text = getattr(value, "text", "")
    return str(text)


async def _agent_verdict(agent: Any, value: Any) -> Tripwire | None:
    answer = await agent.run(_agent_prompt(value))
    output = getattr(answer, "output", None)
    if isinstance(output, Tripwire):
        return output
    if output is not None and getattr(output, "tripped", False) is True:
        return Tripwire(str(getattr(output, "reason", "") or "the guardrail agent tripped"))
    stop = getattr(answer, "stop", None)
    if stop is not None and not stop.ok:
        return Tripwire(f"the guardrail agent stopped: {stop.describe()}")
    return None


async def check_one(guardrail: Guardrail, value: Any) -> Tripped | None:
    """Run one guardrail on ``value``; a raise, or a return value that is neither
    pass nor a tripwire, fails closed."""
    try:
        if _is_agent(guardrail.check):
            result: Any = await _agent_verdict(guardrail.check, value)
        else:
            result = await _maybe_await(guardrail.check(value))
    except Exception as error:
        reason = f"the guardrail raised {type(error).__name__}: {error}"
        return Tripped(guardrail.name, reason)
    if result is None or result is True:
        return None
    if isinstance(result, Tripwire):
        return Tripped(guardrail.name, result.reason or "tripped")
    if result is False:
        return Tripped(guardrail.name, "the guardrail returned False")
    return Tripped(guardrail.name, f"the guardrail returned {type(result).__name__}, not a verdict")


async def check_all(
    guardrails: Sequence[Guardrail], value: Any, *, concurrent: bool = True
) -> Tripped | None:
    """Every guardrail on ``value``: None when all passed, else the first to trip
    (the others are cancelled). ``concurrent`` False: one after another, in order
    (a durable run: its steps keep their order on replay)."""
    if not concurrent or len(guardrails) == 1:
        for guardrail in guardrails:
            tripped = await check_one(guardrail, value)
            if tripped is not None:
                return tripped
        return None
    found: list[Tripped] = []

    async def one(guardrail: Guardrail, scope: anyio.CancelScope) -> None:
        tripped = await check_one(guardrail, value)
        if tripped is not None and not found:
            found.append(tripped)
            scope.cancel()

    async with anyio.create_task_group() as group:
        for guardrail in guardrails:
            group.start_soon(one, guardrail, group.cancel_scope)
    return found[0] if found else None


def tripwire_stop(
    tripped: Tripped, kind: GuardrailKind, model_stop: StopInfo | None, **detail: Any
) -> StopInfo:
    """The stop of an answer a guardrail stopped (the table in the module docstring)."""
    return StopInfo(
        StopReason.REFUSAL,
        raw=f"guardrail:{tripped.name}",
        category=GUARDRAIL_CATEGORY,
        message=tripped.reason,
        detail={
            "guardrail": tripped.name,
            "kind": kind,
            "model_stop": model_stop.to_dict() if model_stop is not None else None,
            **detail,
        },
    )


async def checked(
    guardrails: Sequence[Guardrail], value: Any, ledger: RunBudget, *, concurrent: bool
) -> Tripped | None:
    """:func:`check_all`, with the spend of guardrails that are agents counted in
    ``ledger`` (the run's)."""
    token = CURRENT_LEDGER.set(ledger)
    try:
        return await check_all(guardrails, value, concurrent=concurrent)
    finally:
        CURRENT_LEDGER.reset(token)


class InputGuard:
    """A run's input guardrails, checking beside its first model call: the task,
    and the events held back until every guardrail has passed (``held``)."""

    def __init__(
        self, guardrails: Sequence[Guardrail], value: Any, ledger: RunBudget, *, concurrent: bool
    ) -> None:
        self.task = asyncio.get_running_loop().create_task(
            checked(guardrails, value, ledger, concurrent=concurrent),
            context=contextvars.copy_context(),
        )
        self.held: list[Any] = []

    @property
    def passed(self) -> bool:
        """Whether every guardrail has passed (False while any is still checking)."""
        task = self.task
        return (
            task.done()
            and not task.cancelled()
            and task.exception() is None
            and (task.result() is None)
        )

    async def wait(self) -> None:
        """Until the verdict is in."""
        await asyncio.wait({self.task})

    async def verdict(self) -> Tripped | None:
        """The first tripwire, or None when every guardrail passed."""
        return await self.task

    def cancel(self) -> None:
        self.task.cancel()


def tripped_answer(
    message: AssistantMessage, tripped: Tripped, kind: GuardrailKind
) -> AssistantMessage:
    """``message`` stopped by a guardrail: no text, reasoning, tool calls, output or
    provider record; usage, cost and model kept. ``model_stop`` is the model's own
    stop when it was abnormal, else None."""
    own = message.stop if message.stop is not None and not message.stop.ok else None
    withheld = [call.name for call in message.tool_calls]
    extra = {"withheld_tool_calls": withheld} if withheld else {}
    stop = tripwire_stop(tripped, kind, own, **extra)
    return message.replace(
        text="", reasoning="", tool_calls=(), output=None, provider_record=None, stop=stop
    )
