"""The model client: everything between the loop and a provider's socket.

A :class:`Model` is a vendor row (:mod:`zett_agent.vendors`), a model name and an
httpx client; :func:`resolve_model` makes one from ``"provider:model-name"``. What
it is sent and gives back (:class:`ModelRequest`, :data:`StreamEvent`,
:class:`ModelResponse`) is in no provider's format; the wire protocols
(:mod:`zett_agent.protocols`) translate.

=================  ============================================================
``_model``         :class:`Model`, :class:`ModelClient`, :func:`resolve_model`:
                   retries before output, records replayed to their origin,
                   concurrency slots, the request's stored parts loaded
``_transport``     the only network I/O of a model call: wire faults and limits
                   become stops or typed errors; credentials never follow a
                   redirect to another origin
``_pool``          :class:`ModelTransport`: httpx's API over aiohttp's connector
``_watchdog``      the clocks of one attempt (idle, first output, deadline)
``_limits``        :class:`ReadLimits` (sizes) and :class:`CallTimeouts` (clocks)
``_redact``        API keys and credential headers out of kept provider text
``_local``         :class:`LocalLlamaModel`: llama.cpp's server with SmolLM2
``_fallback``      :class:`FallbackModel` chains and the :class:`CircuitBreaker`
``_costs``         a call's price (genai-prices, extra ``prices``)
``_budgets``       :class:`RunBudget`: a run's usage and cost, ``max_cost``
=================  ============================================================

Names are imported when first used (PEP 562): ``from zett_agent.model import
ReadLimits`` does not import aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zett_agent._lazy import lazy_exports

if TYPE_CHECKING:
    from zett_agent._exchange import (
        ModelRequest,
        ModelResponse,
        OutputFormat,
        ReasoningDelta,
        StreamEvent,
        TextDelta,
        ToolCallDelta,
        ToolSpec,
    )
    from zett_agent.model._budgets import RunBudget
    from zett_agent.model._fallback import CircuitBreaker, FallbackModel
    from zett_agent.model._limits import CallTimeouts, ReadLimits
    from zett_agent.model._local import LocalLlamaModel
    from zett_agent.model._model import Model, ModelClient, resolve_model, shared_ssl_context
    from zett_agent.model._pool import ModelTransport

_EXPORTS: dict[str, str] = {
    "CallTimeouts": "zett_agent.model._limits",
    "CircuitBreaker": "zett_agent.model._fallback",
    "FallbackModel": "zett_agent.model._fallback",
    "LocalLlamaModel": "zett_agent.model._local",
    "Model": "zett_agent.model._model",
    "ModelClient": "zett_agent.model._model",
    "ModelRequest": "zett_agent._exchange",
    "ModelResponse": "zett_agent._exchange",
    "ModelTransport": "zett_agent.model._pool",
    "OutputFormat": "zett_agent._exchange",
    "ReadLimits": "zett_agent.model._limits",
    "ReasoningDelta": "zett_agent._exchange",
    "RunBudget": "zett_agent.model._budgets",
    "StreamEvent": "zett_agent._exchange",
    "TextDelta": "zett_agent._exchange",
    "ToolCallDelta": "zett_agent._exchange",
    "ToolSpec": "zett_agent._exchange",
    "resolve_model": "zett_agent.model._model",
    "shared_ssl_context": "zett_agent.model._model",
}

__all__ = [
    "CallTimeouts",
    "CircuitBreaker",
    "FallbackModel",
    "LocalLlamaModel",
    "Model",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelTransport",
    "OutputFormat",
    "ReadLimits",
    "ReasoningDelta",
    "RunBudget",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
    "resolve_model",
    "shared_ssl_context",
]


__getattr__, __dir__ = lazy_exports("zett_agent.model", _EXPORTS, globals())
