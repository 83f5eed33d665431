"""A model that is an ordered list of models: fallback chains and a circuit breaker.

``FallbackModel(["anthropic:claude-sonnet-4-5", "openai:gpt-5", "google:gemini-2.5-pro"])``
is a :class:`~zett_agent.model.ModelClient` the agent uses like any model. Each
call goes to the first model whose circuit is closed; the chain moves to the next
on what makes the current one unusable **now**, and only before output reached
the host:

* an error with no output once that model's own retries are spent: a 429 (a rate
  limit, or an exhausted quota or balance), a 5xx, 529 or "overloaded", a timeout
  before any output (first output or the attempt deadline), a connection failure,
  the local pool's timeout;
* a :class:`~zett_agent.errors.ContextOverflowError`, when CONTEXT_FULL is in
  ``fallback_on``;
* an answer whose stop reason is in ``fallback_on`` (say REFUSAL, CONTEXT_FULL:
  the host chooses; empty by default).

Other errors (a 400, a bad key, a size limit) are raised as they are: the next
model would not fix the request. Once a model's output has streamed to the host
the chain does not move on, unless ``after_output=True``: the host has then seen
text it must discard, and the answer's ``attempts`` say so
(``ModelAttempt.discarded_output``).

The answer names the model that produced it (``AssistantMessage.provider`` and
``model``) and carries every attempt (``AssistantMessage.attempts``: which model
failed or was skipped, and why); an abnormal stop also has them in
``stop.detail["fallback"]``, and each step's log record in ``attempts``. When
every model failed, the last error is raised with ``error.attempts`` set.

The :class:`CircuitBreaker` skips a model for ``cooldown`` seconds after
``failures`` consecutive failures, then lets one call through (half-open): a
success closes it, a failure opens it again. :data:`DEFAULT_BREAKER` is shared by
every chain of the process (so by all its agents); pass ``breaker=`` for another
one, or None for none. When every model's circuit is open, they are tried anyway,
in order. Stops are not failures.

Provider records (reasoning signatures, encrypted reasoning, server tool blocks)
are replayed only to the vendor and model that produced them
(:func:`zett_agent.model._model.own_records`), so moving to another provider never sends
it a foreign record.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from zett_agent._clock import loop_time
from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import ModelAttempt
from zett_agent.errors import (
    CallTimeoutError,
    ContextOverflowError,
    PoolTimeoutError,
    ProviderError,
    RateLimitError,
    TransportError,
    ZettError,
)
from zett_agent.model._model import ModelClient, resolve_model
from zett_agent.stop import StopReason

__all__ = ["DEFAULT_BREAKER", "CircuitBreaker", "FallbackModel"]


class CircuitBreaker:
    """Per-model failure counts shared by the chains that use it.

    A model (its ``"provider:model"`` key) that failed ``failures`` times in a row
    is skipped for ``cooldown`` seconds; after that one call is let through. Thread
    safety is not needed: one event loop's tasks update it between awaits.
    ``clock`` measures the cooldown: the running event loop's clock by default
    (``time.monotonic()`` outside one), so a test loop with virtual time runs it.
    """

    def __init__(
        self,
        failures: int = 3,
        cooldown: float = 30.0,
        *,
        clock: Callable[[], float] = loop_time,
    ) -> None:
        if failures < 1:
            raise ValueError("failures must be at least 1")
        self.failures = failures
        self.cooldown = cooldown
        self.clock = clock
        self._count: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def open_for(self, key: str) -> float | None:
        """Seconds the circuit of ``key`` stays open, or None when calls may go."""
        until = self._open_until.get(key)
        if until is None:
            return None
        left = until - self.clock()
        return left if left > 0 else None

    def failed(self, key: str) -> None:
        count = self._count[key] = self._count.get(key, 0) + 1
        if count >= self.failures:
            self._open_until[key] = self.clock() + self.cooldown

    def succeeded(self, key: str) -> None:
        self._count.pop(key, None)
        self._open_until.pop(key, None)

    def reset(self) -> None:
        """Forget every count (tests, or after a provider incident)."""
        self._count.clear()
        self._open_until.clear()


DEFAULT_BREAKER = CircuitBreaker()
"""The breaker every :class:`FallbackModel` of the process shares by default."""


def unusable_now(error: BaseException, fallback_on: Collection[StopReason]) -> bool:
    """Whether ``error`` (raised with no output, after the model's retries) makes
    the model unusable now, so a chain moves on."""
    if isinstance(error, ContextOverflowError):
        return StopReason.CONTEXT_FULL in fallback_on
    if isinstance(error, RateLimitError):
        return True  # a rate limit, or a quota that waiting does not bring back
    if isinstance(error, ProviderError):
        return error.retryable
    if isinstance(error, CallTimeoutError | PoolTimeoutError):
        return True
    if isinstance(error, TransportError):
        return error.retryable
    return False


def _describe(error: BaseException) -> str:
    if isinstance(error, ProviderError):
        parts = [str(p) for p in (error.status, error.error_type, error.code) if p is not None]
        return f"{type(error).__name__} {' '.join(parts)}: {error.message}".strip()
    return f"{type(error).__name__}: {error}"


class FallbackModel:
    """An ordered chain of models (any providers) used as one model.

    Args:
        models: model objects or ``"provider:model"`` strings (made with
            ``resolve_model(m, **options)``), tried in this order.
        fallback_on: stop reasons whose answer makes the chain move on (REFUSAL,
            CONTEXT_FULL...); the last model's answer is kept whatever it is.
        after_output: move on even when the current model's output already
            streamed to the host (the attempt records ``discarded_output``).
        breaker: the circuit breaker (default: the process's shared one; None:
            none).
        options: passed to ``resolve_model`` for the string entries.

    Raises :class:`~zett_agent.errors.ConfigError` (from ``resolve_model``) for a
    bad model string, ``ValueError`` for an empty chain.
    """

    supports_prefill = False  # a resumed answer is continued with a user turn

    def __init__(
        self,
        models: Sequence[ModelClient | str],
        *,
        fallback_on: Collection[StopReason] = (),
        after_output: bool = False,
        breaker: CircuitBreaker | None = DEFAULT_BREAKER,
        **options: Any,
    ) -> None:
        if not models:
            raise ValueError("a FallbackModel needs at least one model")
        self.models: list[ModelClient] = [
            resolve_model(m, **options) if isinstance(m, str) else m for m in models
        ]
        self.fallback_on = frozenset(fallback_on)
        self.after_output = after_output
        self.breaker = breaker
        self.name = ",".join(f"{m.provider}:{m.name}" for m in self.models)

    @property
    def provider(self) -> str:
        """``"fallback"``; each answer names the provider that produced it."""
        return "fallback"

    def __repr__(self) -> str:
        return f"FallbackModel({self.name})"

    async def aclose(self) -> None:
        """Close every model of the chain."""
        for model in self.models:
            await model.aclose()

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The record without tool calls, by the model that produced it (its
        ``origin``); None when no model of the chain did."""
        origin = record.get("origin") if isinstance(record, Mapping) else None
        if isinstance(origin, Mapping):
            for model in self.models:
                if model.provider == origin.get("provider"):
                    return model.without_tool_calls(record)
        return None

    async def stream(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        """Yield the events of the model that answers, then its response (with
        ``provider`` and ``attempts`` set). Raises the last model's error (with
        ``attempts``) when none answered, or at once an error that another model
        would not fix."""
        attempts: list[ModelAttempt] = []
        breaker = self.breaker
        order: list[ModelClient] = []
        for model in self.models:
            left = breaker.open_for(_key(model)) if breaker is not None else None
            if left is None:
                order.append(model)
            else:
                attempts.append(
                    ModelAttempt(
                        model.provider,
                        model.name,
                        "skipped",
                        error=f"circuit open after repeated failures ({left:.0f} s left)",
                    )
                )
        if not order:  # every circuit is open: try them anyway, in order
            order, attempts = list(self.models), []
        last_error: ZettError | None = None
        for n, model in enumerate(order):
            final = n == len(order) - 1
            streamed = False
            response: ModelResponse | None = None
            try:
                async for item in model.stream(replace(request, model=model.name)):
                    if isinstance(item, ModelResponse):
                        response = item
                    else:
                        streamed = True
                        yield item
            except ZettError as error:
                if streamed or not unusable_now(error, self.fallback_on):
                    error.attempts = (*attempts, _failed(model, error))
                    raise
                if breaker is not None:
                    breaker.failed(_key(model))
                attempts.append(_failed(model, error))
                last_error = error
                continue
            assert response is not None, "a model stream must end with a ModelResponse"
            reason = response.stop_info.reason
            if not final and reason in self.fallback_on and (not streamed or self.after_output):
                attempts.append(
                    ModelAttempt(
                        model.provider,
                        model.name,
                        "stopped",
                        stop=response.stop_info.raw or reason.value,
                        discarded_output=streamed,
                        usage=response.usage,
                    )
                )
                continue
            if breaker is not None:
                breaker.succeeded(_key(model))
            attempts.append(ModelAttempt(model.provider, model.name, "answered"))
            info = response.stop_info
            if not info.ok and len(attempts) > 1:
                info = info.with_detail(fallback=[asdict(a) for a in attempts])
            yield replace(
                response,
                stop_info=info,
                provider=model.provider,
                model=response.model or model.name,
                attempts=tuple(attempts),
            )
            return
        assert last_error is not None
        last_error.attempts = tuple(attempts)
        raise last_error


def _key(model: ModelClient) -> str:
    return f"{model.provider}:{model.name}"


def _failed(model: ModelClient, error: BaseException) -> ModelAttempt:
    return ModelAttempt(model.provider, model.name, "failed", error=_describe(error))
