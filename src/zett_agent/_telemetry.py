"""Telemetry a host already knows how to read: OpenTelemetry spans and one log
record per model call.

Spans
=====

With ``opentelemetry-api`` installed (the ``otel`` extra) the loop makes spans
that follow the OpenTelemetry GenAI semantic conventions, on the tracer provider
of ``AgentRunConfig.tracer_provider`` or else the global one
(``AgentRunConfig.telemetry=False`` turns them off). Without the package the
import is tried once, by the first run (not by ``import zett_agent``), and every
call here is one ``None`` check.

==========================  ========  =============================================
span                        kind      attributes
==========================  ========  =============================================
``invoke_agent {name}``     INTERNAL  ``gen_ai.operation.name="invoke_agent"``,
(one per run)                         ``gen_ai.agent.name``, ``gen_ai.provider.name``,
                                      ``gen_ai.request.model``, ``zett.run_id``; at the
                                      end ``gen_ai.usage.input_tokens`` /
                                      ``output_tokens`` (the run's sums),
                                      ``zett.steps``, ``zett.recoveries`` and the
                                      final message's ``zett.stop.*``
``chat {model}``            CLIENT    ``gen_ai.operation.name="chat"``,
(one per model call)                  ``gen_ai.provider.name``, ``gen_ai.request.model``,
                                      ``gen_ai.request.max_tokens`` /
                                      ``temperature`` when set,
                                      ``gen_ai.response.model``,
                                      ``gen_ai.response.finish_reasons`` (the RAW
                                      provider value), ``gen_ai.usage.*``,
                                      ``zett.stop.*``, ``zett.recovery.*``
``execute_tool {tool}``     INTERNAL  ``gen_ai.operation.name="execute_tool"``,
(one per tool call)                   ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
                                      ``gen_ai.tool.type="function"``
==========================  ========  =============================================

zett attributes: ``zett.stop.reason`` (the normalized :class:`StopReason`
value, ``end_turn`` / ``tool_use`` included), ``zett.stop.category`` (only for an
abnormal stop), ``zett.stop.withheld_tool_calls`` (names, when any),
``zett.recovery.by`` / ``zett.recovery.action`` (a call an extension recovered
from, see :mod:`zett_agent._recovery`). A failed call or run has status ERROR and
``error.type`` (the provider's error code or type, else the exception class); a
cancelled one ``zett.cancelled=true`` and no error status; a tool result with
``is_error`` sets ``error.type="tool_error"``.

Chat and tool spans are children of the run span. The run span is a child of the
span current when the run starts. Chat spans are not made *current* (the loop is
an async generator, and a context attached there would leak into the consumer);
tool spans are current while the tool runs, so a tool's own spans nest in them.

The loop makes the spans itself rather than through an extension: extensions see
model calls and tool calls but not the run's start and end, nor failures.

Step log record (stable)
========================

One record per model call goes to the ``zett_agent.steps`` logger at INFO: the
message is the JSON of the record and the record is also on the log record as
``record.zett_step``. Its keys are stable (:data:`STEP_RECORD_KEYS`):

=====================  ======================================================
run_id                 the run (as in events)
agent                  ``AgentRunConfig.name``
step                   model call number in the run, from 1
provider               the vendor name of the model called
model                  the model that answered (else the one asked)
finish_reason_raw      the provider's own stop value (may be null)
finish_reason          the normalized StopReason value
content_len            characters of answer text
tool_calls_count       tool calls the step kept
withheld_tool_calls    tool calls withheld (REFUSAL, INTERRUPTED, a recovery)
input_tokens           as reported (may be null)
output_tokens          as reported (may be null)
elapsed_ms             wall time of the call, milliseconds (one decimal)
cache_read_tokens      input tokens read from the prompt cache (may be null)
cache_write_tokens     input tokens written to it (may be null)
=====================  ======================================================

An answer of a fallback chain adds ``attempts``: one object per model tried
(provider, model, outcome, error, stop, discarded_output), the last one answered;
``provider`` is then the vendor that answered.

Each recovery also gets one record on the ``zett_agent._recovery`` logger (INFO,
``record.zett_recovery``): run_id, step, by, action, reason, note.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from zett_agent._exchange import ModelRequest, ModelResponse, names_in
from zett_agent._messages import AssistantMessage, Cost, ToolCall, ToolResultMessage, Usage
from zett_agent.stop import StopInfo
from zett_agent.vendors import VENDORS

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["STEP_RECORD_KEYS", "Telemetry", "log_recovery", "log_step", "provider_name"]

_OTEL: list[Any] = []  # [the opentelemetry.trace module, or None], filled by the first run


def _otel() -> Any:
    """``opentelemetry.trace``, imported by the first run that makes spans (not by
    ``import zett_agent``); None when the "otel" extra is not installed."""
    if not _OTEL:
        try:
            from opentelemetry import trace
        except ImportError:  # pragma: no cover - the "otel" extra is not installed
            trace = None  # type: ignore[assignment]
        _OTEL.append(trace)
    return _OTEL[0]


step_log = logging.getLogger("zett_agent.steps")
recovery_log = logging.getLogger("zett_agent.recovery")

STEP_RECORD_KEYS: tuple[str, ...] = (
    "run_id",
    "agent",
    "step",
    "provider",
    "model",
    "finish_reason_raw",
    "finish_reason",
    "content_len",
    "tool_calls_count",
    "withheld_tool_calls",
    "input_tokens",
    "output_tokens",
    "elapsed_ms",
    "cache_read_tokens",
    "cache_write_tokens",
)
"""The keys of the per-step log record, in order. Stable: add, never rename."""


_NULL: AbstractContextManager[None] = nullcontext()


def provider_name(vendor: str) -> str:
    """The ``gen_ai.provider.name`` for a vendor name: the row's ``otel_name`` (a
    well-known value of the conventions) where it has one, else the vendor name."""
    row = VENDORS.get(vendor)
    return row.otel_name if row is not None and row.otel_name else vendor


def log_step(
    *,
    run_id: str,
    agent: str,
    step: int,
    provider: str,
    model: str,
    response: ModelResponse,
    elapsed_ms: float,
) -> None:
    """Emit the per-step record (see the module docstring) when INFO is enabled."""
    if not step_log.isEnabledFor(logging.INFO):
        return
    info = response.stop_info
    record = {
        "run_id": run_id,
        "agent": agent,
        "step": step,
        "provider": response.provider or provider,
        "model": response.model or model,
        "finish_reason_raw": info.raw,
        "finish_reason": info.reason.value,
        "content_len": len(response.text),
        "tool_calls_count": len(response.tool_calls),
        "withheld_tool_calls": len(names_in(info.detail, "withheld_tool_calls")),
        "input_tokens": response.usage.input_tokens,
        "output_tokens": response.usage.output_tokens,
        "elapsed_ms": round(elapsed_ms, 1),
        "cache_read_tokens": response.usage.cached_input_tokens,
        "cache_write_tokens": response.usage.cache_write_tokens,
    }
    if response.attempts:  # a fallback chain: what each model did
        record["attempts"] = [asdict(attempt) for attempt in response.attempts]
    step_log.info(json.dumps(record), extra={"zett_step": record})


def log_recovery(
    *, run_id: str, step: int, by: str, action: str, reason: str, note: Mapping[str, Any]
) -> None:
    """Emit one ``zett_agent._recovery`` record."""
    if not recovery_log.isEnabledFor(logging.INFO):
        return
    record = {
        "run_id": run_id,
        "step": step,
        "by": by,
        "action": action,
        "reason": reason,
        "note": dict(note),
    }
    recovery_log.info(json.dumps(record, default=str), extra={"zett_recovery": record})


def _stop_attributes(stop: StopInfo) -> dict[str, Any]:
    attributes: dict[str, Any] = {"zett.stop.reason": stop.reason.value}
    if not stop.ok and stop.category:
        attributes["zett.stop.category"] = stop.category
    withheld = names_in(stop.detail, "withheld_tool_calls")  # flat strings, whatever came
    if withheld:
        attributes["zett.stop.withheld_tool_calls"] = withheld
    return attributes


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if usage.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cached_input_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens is not None:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return attributes


def _error_type(error: BaseException) -> str:
    code = getattr(error, "code", None) or getattr(error, "error_type", None)
    return str(code) if code else type(error).__name__


class Telemetry:
    """Makes the spans of one run; every method is a no-op when OpenTelemetry is
    absent or ``enabled`` is False.

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider`` (default: the global one).
        enabled: False for no spans at all.
    """

    def __init__(self, tracer_provider: Any = None, *, enabled: bool = True) -> None:
        self.tracer: Any = None
        if enabled and _otel() is not None:
            self.tracer = _otel().get_tracer("zett_agent", tracer_provider=tracer_provider)

    # ------------------------------------------------------------ run

    def start_run(self, *, agent: str, run_id: str, provider: str, model: str) -> Span | None:
        if self.tracer is None:
            return None
        span: Span = self.tracer.start_span(
            f"invoke_agent {agent}",
            kind=_otel().SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.provider.name": provider_name(provider),
                "gen_ai.request.model": model,
                "zett.run_id": run_id,
            },
        )
        return span

    def end_run(
        self,
        span: Span | None,
        *,
        final: AssistantMessage | None,
        usage: Usage,
        steps: int,
        recoveries: int,
        error: BaseException | None,
        cost: Cost | None = None,
    ) -> None:
        if span is None:
            return
        attributes: dict[str, Any] = {
            "zett.steps": steps,
            "zett.recoveries": recoveries,
            **_usage_attributes(usage),
        }
        if cost is not None:  # priced: the sum, or "unknown"
            attributes["zett.cost.usd"] = cost.usd if cost.usd is not None else "unknown"
        if final is not None:
            if final.stop is not None:
                attributes.update(_stop_attributes(final.stop))
            else:
                attributes["zett.stop.reason"] = "end_turn"
        span.set_attributes(attributes)
        if error is not None:
            self._fail(span, error)
        span.end()

    # ------------------------------------------------------------ model calls

    def start_chat(self, parent: Span | None, request: ModelRequest, provider: str) -> Span | None:
        if self.tracer is None:
            return None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(provider),
            "gen_ai.request.model": request.model,
        }
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        span: Span = self.tracer.start_span(
            f"chat {request.model}",
            context=self._context(parent),
            kind=_otel().SpanKind.CLIENT,
            attributes=attributes,
        )
        return span

    def end_chat(
        self,
        span: Span | None,
        response: ModelResponse | None,
        *,
        error: BaseException | None = None,
        recovery: tuple[str, str] | None = None,
    ) -> None:
        """End a chat span; ``response`` None when the call raised ``error``;
        ``recovery`` is (extension, action) when one acted on the call."""
        if span is None:
            return
        attributes: dict[str, Any] = {}
        if response is not None and error is None:
            info = response.stop_info
            attributes["gen_ai.response.finish_reasons"] = [info.raw or info.reason.value]
            if response.model:
                attributes["gen_ai.response.model"] = response.model
            attributes.update(_usage_attributes(response.usage))
            attributes.update(_stop_attributes(info))
        if recovery is not None:
            attributes["zett.recovery.by"], attributes["zett.recovery.action"] = recovery
        span.set_attributes(attributes)
        if error is not None:
            self._fail(span, error)
        span.end()

    # ------------------------------------------------------------ tools

    def start_tool(self, parent: Span | None, call: ToolCall) -> Span | None:
        if self.tracer is None:
            return None
        span: Span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context(parent),
            kind=_otel().SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        return span

    def current(self, span: Span | None) -> AbstractContextManager[Any]:
        """Make ``span`` current inside a ``with`` block (nothing when None)."""
        if span is None:
            return _NULL
        current: AbstractContextManager[Any] = _otel().use_span(span, end_on_exit=False)
        return current

    def end_tool(
        self,
        span: Span | None,
        result: ToolResultMessage | None,
        error: BaseException | None = None,
    ) -> None:
        if span is None:
            return
        if result is not None and result.is_error:
            span.set_attribute("error.type", "tool_error")
        if error is not None:
            self._fail(span, error)
        span.end()

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _context(parent: Span | None) -> Any:
        return _otel().set_span_in_context(parent) if parent is not None else None

    @staticmethod
    def _fail(span: Span, error: BaseException) -> None:
        if not isinstance(error, Exception):  # cancelled, or the consumer closed the stream
            span.set_attribute("zett.cancelled", True)
            return
        span.set_attribute("error.type", _error_type(error))
        span.record_exception(error)
        span.set_status(_otel().Status(_otel().StatusCode.ERROR, str(error)[:200]))
