"""What a run has spent, and its budgets: ``max_cost`` and ``max_total_tokens``.

The loop keeps one :class:`RunBudget` per run. It prices each answer when the run
asks for costs (``AgentRunConfig.cost``, or a ``max_cost``): the answer's
``cost`` (:mod:`zett_agent.model._costs`, at the call's start time); it sums usage and
cost; and before each model call, like ``max_turns``, it says whether a budget is
used up. The run then ends with a stored marker answer whose stop is OTHER with
``raw`` ``"max_cost"`` or ``"max_total_tokens"`` (``detail`` holds the budget and
what was spent), never sent to a model. A budget is checked between calls: the
call that crosses it finishes, and its answer is kept.

With ``max_cost`` set, a model whose price is unknown (a local model, one the
table does not list, the ``prices`` extra missing) is a
:class:`~zett_agent.errors.ConfigError` before anything is sent.
"""

from __future__ import annotations

import datetime
from typing import Any

from zett_agent._messages import AssistantMessage, Cost, Usage
from zett_agent.errors import ConfigError
from zett_agent.model._costs import price, price_known
from zett_agent.stop import StopInfo, StopReason

__all__ = ["MAX_COST_RAW", "MAX_TOTAL_TOKENS_RAW", "RunBudget"]

MAX_COST_RAW = "max_cost"
MAX_TOTAL_TOKENS_RAW = "max_total_tokens"


class RunBudget:
    """One run's spending: ``usage`` and ``cost`` so far (``cost`` None: not priced)."""

    def __init__(
        self, *, priced: bool, max_cost: float | None, max_total_tokens: int | None
    ) -> None:
        self.max_cost = max_cost
        self.max_total_tokens = max_total_tokens
        self.priced = priced or max_cost is not None
        self.usage = Usage()
        self.cost: Cost | None = Cost(0.0) if self.priced else None

    def check_prices(self, model: Any) -> None:
        """With ``max_cost`` set: raise ConfigError unless every model of ``model``
        (a chain's ``models``, else the model itself) has a price."""
        if self.max_cost is None:
            return
        for member in getattr(model, "models", None) or [model]:
            unknown = price_known(member.provider, member.name)
            if unknown is not None:
                raise ConfigError(
                    f"max_cost={self.max_cost} needs a known price, and the price of "
                    f"{member.provider}:{member.name} is unknown: {unknown}"
                )

    def priced_answer(
        self, answer: AssistantMessage, model_name: str, at: datetime.datetime
    ) -> AssistantMessage:
        """``answer`` with its ``cost`` (when the run prices answers): the model the
        provider reported, else the one asked for (a gateway's own name)."""
        if not self.priced:
            return answer
        if answer.attempts:  # a fallback chain: the model of the chain that answered
            model_name = answer.attempts[-1].model
        cost = price(answer.provider, answer.model or model_name, answer.usage, at)
        if cost.usd is None and answer.model and answer.model != model_name:
            cost = price(answer.provider, model_name, answer.usage, at)
        return answer.replace(cost=cost)

    def add(self, answer: AssistantMessage) -> None:
        self.usage = self.usage + answer.usage
        if self.cost is not None:
            self.cost = self.cost + (answer.cost or Cost(None, "not priced"))

    def exhausted(self, model: Any) -> AssistantMessage | None:
        """The marker answer that ends the run when a budget is used up, else None."""
        spent = self.usage.total_tokens
        if self.max_total_tokens is not None and spent >= self.max_total_tokens:
            return _marker(
                MAX_TOTAL_TOKENS_RAW,
                f"The run used {spent} tokens of its budget of {self.max_total_tokens}.",
                {"max_total_tokens": self.max_total_tokens, "total_tokens": spent},
                model,
            )
        usd = self.cost.usd if self.cost is not None else None
        if self.max_cost is not None and usd is not None and usd >= self.max_cost:
            return _marker(
                MAX_COST_RAW,
                f"The run spent ${usd:.6f} of its budget of ${self.max_cost}.",
                {"max_cost": self.max_cost, "cost_usd": usd},
                model,
            )
        return None


def _marker(raw: str, message: str, detail: dict[str, Any], model: Any) -> AssistantMessage:
    stop = StopInfo(
        StopReason.OTHER, raw=raw, category=raw, message=message, detail={**detail, "marker": True}
    )
    return AssistantMessage(stop=stop, model=model.name, provider=model.provider)
