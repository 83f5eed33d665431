"""What a run has spent, and its budgets: ``max_cost`` and ``max_total_tokens``.

One ledger per run: the loop keeps one :class:`RunBudget` per run, and every model
call the run causes is counted in it:

==========================  ====================================================
spend                       how it reaches the ledger
==========================  ====================================================
the run's answers           ``RunBudget.add`` for each stored answer (structured-
                            output retries and recoveries' retries are answers)
a fallback chain's answer   the answer, plus each attempt the chain moved on from
                            after it answered (``ModelAttempt.usage``, priced at
                            that attempt's model)
compaction, summaries       :func:`charge` (``ContextCompaction(summarize="model")``)
MCP sampling                :func:`charge` from the sampling callback, beside the
                            ``SAMPLING_REQUESTED`` / ``SAMPLING_COMPLETED`` events
subagents, background runs  a run started while a run's tools run has that run's
                            ledger as its ``parent``: each answer of the child is
                            counted in the child and in every ancestor, and the
                            child stops when any ancestor's budget is reached
                            (parallel children add to the same ledger: they share
                            one remaining budget)
guardrails that are agents  the same as a subagent
==========================  ====================================================

A model call that failed before any output (an HTTP error, a connection failure,
retried by the model client) has no usage to count: providers do not bill an
error answer.

It prices each answer when the run asks for costs (``AgentRunConfig.cost``, a
``max_cost``, or an ancestor that prices): the answer's ``cost``
(:mod:`zett_agent.model._costs`, at the call's start time). Before each model call,
like ``max_turns``, it says whether a budget is used up (:meth:`RunBudget.exhausted`).
The run then ends with a stored marker answer whose stop is OTHER with ``raw``
``"max_cost"`` or ``"max_total_tokens"`` (``detail`` holds the budget and what was
spent), never sent to a model. The call that crosses a budget finishes and its
answer is kept; its tool calls do not start (the loop answers them "not run: the
run's budget was reached", named in ``detail["not_run_tool_calls"]``) unless the
host sets ``AgentRunConfig.finish_tools_over_budget``.

**Unknown is never 0.** An answer without usage (a stream cut before its usage
chunk, a provider or relay that sends none) has an unknown cost
(``Cost(None, "the provider sent no usage")``) and unknown tokens. Under a budget
that needs them (``max_cost``; ``max_total_tokens``) the run ends at once with that
budget's stop, ``detail["unknown"]`` saying why. zett does not estimate a price
from bytes: a byte count is not a token count (tokenizers differ by a factor of 2
to 4 across languages, hidden reasoning tokens are billed and never sent), so an
estimate could let a run spend past the limit its host trusts.

With ``max_cost`` set, a model whose price is unknown (a local model, one the
table does not list, the ``prices`` extra missing) is a
:class:`~zett_agent.errors.ConfigError` before anything is sent.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from zett_agent._messages import AssistantMessage, Cost, Usage
from zett_agent.errors import ConfigError
from zett_agent.model._costs import NO_USAGE, price, price_known, usage_missing
from zett_agent.stop import StopInfo, StopReason

__all__ = [
    "BUDGET_NOT_RUN",
    "CURRENT_LEDGER",
    "MAX_COST_RAW",
    "MAX_TOTAL_TOKENS_RAW",
    "RunBudget",
    "charge",
]

MAX_COST_RAW = "max_cost"
MAX_TOTAL_TOKENS_RAW = "max_total_tokens"
BUDGET_NOT_RUN = "not run: the run's budget was reached"
"""The result of a tool call of the answer that crossed a budget."""

CURRENT_LEDGER: ContextVar[RunBudget | None] = ContextVar("zett_run_ledger", default=None)
"""The ledger of the run whose tools (or guardrails) are running: a run started
there, a sampling request or a summary counts its spend in it."""


class RunBudget:
    """One run's spending: ``usage`` and ``cost`` so far (``cost`` None: not priced).

    ``parent``: the ledger of the run that started this one (a subagent's, a
    background run's); None for a top-level run. Spend added here is added to
    every ancestor too, and :meth:`exhausted` checks every ancestor's budget.
    """

    def __init__(
        self,
        *,
        priced: bool,
        max_cost: float | None,
        max_total_tokens: int | None,
        parent: RunBudget | None = None,
    ) -> None:
        self.max_cost = max_cost
        self.max_total_tokens = max_total_tokens
        self.parent = parent
        self.priced: bool = priced or max_cost is not None or (parent is not None and parent.priced)
        self.usage = Usage()
        self.cost: Cost | None = Cost(0.0) if self.priced else None
        self.unknown_usage: str | None = None  # why some spend has no usage, if any did

    def chain(self) -> Iterator[RunBudget]:
        """This ledger, then its ancestors."""
        budget: RunBudget | None = self
        while budget is not None:
            yield budget
            budget = budget.parent

    @property
    def bounded(self) -> bool:
        """Whether this run or an ancestor has a budget."""
        return any(b.max_cost is not None or b.max_total_tokens is not None for b in self.chain())

    def check_prices(self, model: Any) -> None:
        """With ``max_cost`` set (here or on an ancestor): raise ConfigError unless
        every model of ``model`` (a chain's ``models``, else the model itself) has a
        price."""
        limit = next((b.max_cost for b in self.chain() if b.max_cost is not None), None)
        if limit is None:
            return
        for member in getattr(model, "models", None) or [model]:
            unknown = price_known(member.provider, member.name)
            if unknown is not None:
                raise ConfigError(
                    f"max_cost={limit} needs a known price, and the price of "
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

    def add(self, answer: AssistantMessage, *, failed: bool = False) -> None:
        """Count a stored answer, and the fallback attempts it superseded.
        ``failed``: the record of a call that failed before any output (nothing
        billed: counted as 0, not as unknown)."""
        if failed:
            if self.cost is not None:
                self.spend(Usage(0, 0), Cost(0.0))
            return
        cost = answer.cost or Cost(None, "not priced")
        self.spend(answer.usage, cost)
        for attempt in answer.attempts:
            if attempt.usage is not None:  # an answer the chain moved on from
                spent = price(attempt.provider, attempt.model, attempt.usage)
                self.spend(attempt.usage, spent if self.priced else Cost(None, "not priced"))

    def spend(self, usage: Usage, cost: Cost | None = None) -> None:
        """Count ``usage`` (and its ``cost``) here and in every ancestor."""
        missing = usage_missing(usage)
        for budget in self.chain():
            budget.usage = budget.usage + usage
            if budget.cost is not None:
                budget.cost = budget.cost + (cost or Cost(None, "not priced"))
            if missing and budget.unknown_usage is None:
                budget.unknown_usage = NO_USAGE

    def exhausted(self, model: Any) -> AssistantMessage | None:
        """The marker answer that ends the run when a budget (this run's or an
        ancestor's) is used up, or can no longer be kept (spend unknown), else None."""
        for budget in self.chain():
            marker = budget._marker_if_spent(model, own=budget is self)
            if marker is not None:
                return marker
        return None

    def _marker_if_spent(self, model: Any, *, own: bool) -> AssistantMessage | None:
        whose = "The run" if own else "A run that started this one"
        extra: dict[str, Any] = {} if own else {"ancestor": True}
        spent = self.usage.total_tokens
        if self.max_total_tokens is not None:
            if self.unknown_usage is not None:
                return _marker(
                    MAX_TOTAL_TOKENS_RAW,
                    f"{whose} cannot keep its budget of {self.max_total_tokens} tokens: "
                    f"{self.unknown_usage}, so what it used is unknown.",
                    {"max_total_tokens": self.max_total_tokens, "total_tokens": None}
                    | {"unknown": self.unknown_usage, **extra},
                    model,
                )
            if spent >= self.max_total_tokens:
                return _marker(
                    MAX_TOTAL_TOKENS_RAW,
                    f"{whose} used {spent} tokens of its budget of {self.max_total_tokens}.",
                    {"max_total_tokens": self.max_total_tokens, "total_tokens": spent, **extra},
                    model,
                )
        if self.max_cost is not None and self.cost is not None:
            usd = self.cost.usd
            if usd is None:
                why = self.cost.unknown or "unknown"
                return _marker(
                    MAX_COST_RAW,
                    f"{whose} cannot keep its budget of ${self.max_cost}: {why}, so what "
                    "it spent is unknown.",
                    {"max_cost": self.max_cost, "cost_usd": None, "unknown": why, **extra},
                    model,
                )
            if usd >= self.max_cost:
                return _marker(
                    MAX_COST_RAW,
                    f"{whose} spent ${usd:.6f} of its budget of ${self.max_cost}.",
                    {"max_cost": self.max_cost, "cost_usd": usd, **extra},
                    model,
                )
        return None


def charge(
    provider: str | None,
    model: str | None,
    usage: Usage,
    ledger: RunBudget | None = None,
    *,
    asked: str | None = None,
) -> Cost | None:
    """Count one model call made on a run's behalf outside its loop (a summary, an
    MCP sampling request) in ``ledger`` (None: the current run's,
    :data:`CURRENT_LEDGER`) and every ancestor's. ``model`` is the model the
    provider reported, ``asked`` the one asked for (priced when ``model`` has no
    price: a gateway's own name). Returns its cost when the run prices (None: no
    run, or not priced)."""
    ledger = ledger if ledger is not None else CURRENT_LEDGER.get()
    if ledger is None:
        return None
    cost: Cost | None = None
    if ledger.priced:
        cost = price(provider, model or asked, usage)
        if cost.usd is None and asked and asked != model and not usage_missing(usage):
            cost = price(provider, asked, usage)
    ledger.spend(usage, cost)
    return cost


def _marker(raw: str, message: str, detail: dict[str, Any], model: Any) -> AssistantMessage:
    stop = StopInfo(
        StopReason.OTHER, raw=raw, category=raw, message=message, detail={**detail, "marker": True}
    )
    return AssistantMessage(stop=stop, model=model.name, provider=model.provider)
