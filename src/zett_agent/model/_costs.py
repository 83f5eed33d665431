"""What model calls cost, from the ``genai-prices`` price table (extra ``prices``).

:func:`price` turns one call's :class:`~zett_agent.Usage` into a
:class:`~zett_agent.Cost` in US dollars, with the prices in force at the
request's time (``genai_request_timestamp``: the table dates its price changes).
The vendor row's ``price_provider`` names the table's provider
(:mod:`zett_agent.vendors`); a row without one (llama.cpp, Ollama, OpenCode Zen,
Qwen), a model the table does not list, or a missing extra gives an *unknown*
cost that says why, never 0.

``genai_prices`` is imported on the first price asked for (~130-350 ms to import,
~30-150 ms for the first lookup), never at start-up. The table used is the one
bundled with the pinned package: zett never starts genai-prices' ``UpdatePrices``
(the only code in it that downloads a newer table), so a price never comes from
the network unless the host itself starts that updater.
"""

from __future__ import annotations

import datetime
import functools
from types import ModuleType

from zett_agent._messages import Cost, Usage
from zett_agent.vendors import VENDORS

__all__ = ["NO_USAGE", "price", "price_known", "usage_missing"]

NO_USAGE = "the provider sent no usage"
"""Why an answer without token counts has an unknown cost (never 0)."""

_EXTRA = "the 'prices' extra is not installed (pip install 'zett-agent[prices]')"


@functools.cache
def _table() -> ModuleType | None:
    try:
        import genai_prices
    except ImportError:
        return None
    return genai_prices


def _provider_id(provider: str | None) -> str | None:
    row = VENDORS.get(provider or "")
    return row.price_provider if row is not None else None


def price(
    provider: str | None,
    model: str | None,
    usage: Usage,
    at: datetime.datetime | None = None,
) -> Cost:
    """The cost of one call of ``provider``'s ``model`` that used ``usage``, at the
    prices in force at ``at`` (the request's time; None: now). Input tokens are the
    whole input; cache reads and writes are priced at their own rates. A ``usage``
    without input or output tokens is an unknown cost (:data:`NO_USAGE`), never 0."""
    if usage_missing(usage):
        return Cost(None, NO_USAGE)
    provider_id = _provider_id(provider)
    if provider_id is None or not model:
        return Cost(None, f"no price table for {provider}:{model}")
    table = _table()
    if table is None:
        return Cost(None, _EXTRA)
    counts = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }
    try:
        calculation = table.calc_price(
            table.Usage(**{k: v for k, v in counts.items() if v is not None}),
            model,
            provider_id=provider_id,
            genai_request_timestamp=at or datetime.datetime.now(datetime.UTC),
        )
    except LookupError:
        return Cost(None, f"genai-prices has no price for {provider}:{model}")
    return Cost(float(calculation.total_price))


def price_known(provider: str | None, model: str | None) -> str | None:
    """None when ``provider:model`` has a price, else why not (for ``max_cost``)."""
    cost = price(provider, model, Usage(input_tokens=0, output_tokens=0))
    return cost.unknown


def usage_missing(usage: Usage) -> bool:
    """Whether ``usage`` lacks the input or the output count (the provider sent
    none, or the stream ended before its usage chunk): its spend is unknown."""
    return usage.input_tokens is None or usage.output_tokens is None
