"""One run's budget decisions, for the loop (:mod:`zett_agent._loop`).

The ledger itself (what is spent, when a budget is used up) is
:class:`~zett_agent.model._budgets.RunBudget`; this module is what a run does with it:

==========================  ====================================================
decision                    where the loop asks
==========================  ====================================================
the run's ledger            :func:`run_ledger`: one per run, a child of the ledger
                            of the run whose tool started it
whose spend counts here     :func:`counting_in`: hooks, recoveries and tools run
                            with the run's ledger current
end before a call           :meth:`RunBudget.exhausted` (beside ``max_turns``)
the crossing answer's calls :func:`stops_tools`: the marker when a budget is used up
                            and the host did not opt in to finishing them
                            (``AgentRunConfig.finish_tools_over_budget``);
                            :func:`not_run`: their results and the marker naming
                            them in ``detail["not_run_tool_calls"]``
==========================  ====================================================
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from zett_agent._messages import AssistantMessage, ToolCall, ToolResultMessage
from zett_agent.model._budgets import BUDGET_NOT_RUN, CURRENT_LEDGER, RunBudget

if TYPE_CHECKING:
    from zett_agent._config import AgentRunConfig

__all__ = ["counting_in", "not_run", "run_ledger", "stops_tools"]


def run_ledger(config: AgentRunConfig) -> RunBudget:
    """A new run's ledger; its parent is the current one (a run started by a run's
    tool: one ledger, every ancestor's budget checked)."""
    return RunBudget(
        priced=config.cost,
        max_cost=config.max_cost,
        max_total_tokens=config.max_total_tokens,
        parent=CURRENT_LEDGER.get(),
    )


@contextmanager
def counting_in(budget: RunBudget) -> Iterator[None]:
    """The model calls made inside (a hook's, a recovery's, a tool's run) count in
    ``budget``."""
    token = CURRENT_LEDGER.set(budget)
    try:
        yield
    finally:
        CURRENT_LEDGER.reset(token)


def stops_tools(budget: RunBudget, config: AgentRunConfig, model: Any) -> AssistantMessage | None:
    """The budget marker when a budget is used up and the host did not opt in to
    finishing the crossing answer's tool calls
    (``AgentRunConfig.finish_tools_over_budget``), else None."""
    if config.finish_tools_over_budget:
        return None
    return budget.exhausted(model)


def not_run(
    calls: Sequence[ToolCall],
    answered: Mapping[str, ToolResultMessage],
    marker: AssistantMessage,
) -> tuple[list[ToolResultMessage], AssistantMessage]:
    """The crossing answer's ``calls`` answered without starting (a call the gate's
    rules 1-3 already ``answered`` keeps that answer), in the calls' order, and
    ``marker`` naming the others in ``detail["not_run_tool_calls"]``."""
    results: list[ToolResultMessage] = []
    names: list[str] = []
    for call in calls:
        result = answered.get(call.id)
        if result is None:
            result = ToolResultMessage(call.id, call.name, BUDGET_NOT_RUN, is_error=True)
            names.append(call.name)
        results.append(result)
    assert marker.stop is not None
    return results, marker.replace(stop=marker.stop.with_detail(not_run_tool_calls=names))
