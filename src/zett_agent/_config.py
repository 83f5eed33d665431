"""How an agent runs: :class:`AgentRunConfig` (limits, tools, approvals, outputs).

Every field has a default a newcomer can run with; the loop (:mod:`._loop`), the
tool gate (``tools/_gate.py``) and the structured run (:mod:`._structured`) read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zett_agent._output import OutputMode
from zett_agent._structured import DEFAULT_OUTPUT_RETRIES, OutputValidator
from zett_agent.tools._approvals import (
    ApprovalPolicy,
)
from zett_agent.tools._gate import (
    DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOL_RESULT_BYTES,
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
)
from zett_agent.vendors import ServerTool

__all__ = ["AgentRunConfig"]


@dataclass
class AgentRunConfig:
    """How an agent runs.

    Attributes:
        name: a name for logs and spans.
        instructions: the system prompt, if any.
        max_turns: most model calls in one run; then the run completes with
            ``stop.raw == "max_turns"`` (reason OTHER) instead of going on.
        max_tokens: output limit per model call, in tokens (None: provider default).
        temperature: sampling temperature (None: provider default).
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name. A call
            the request did not allow (any call under ``"none"``, a call of
            another tool than the one named) never runs: it gets an error result
            and ``stop.detail["not_offered_tool_calls"]`` names it.
        reset_tool_choice: once tools have run in a run, send later requests
            without a forcing ``tool_choice`` (``"required"`` or a name; the
            provider's auto instead), so a forced choice cannot loop until
            ``max_turns``. ``"none"`` is never reset.
        parallel_tools: run the tool calls of one step concurrently (each result
            is stored as its call ends; the model gets them in the calls' order).
        model_options: provider-specific fields merged into the request body.
        telemetry: make OpenTelemetry spans (when the ``otel`` extra is installed).
        tracer_provider: the OpenTelemetry ``TracerProvider`` for them (None: the
            global one).
        approval: a policy given each tool call (arguments a JSON object):
            True makes the call wait for a person's approval
            (:mod:`zett_agent.approvals`). Tools with ``requires_approval`` always
            wait.
        tool_timeout: seconds a tool call may run when the tool sets no
            ``timeout`` of its own (None: no limit); an overrun is answered with
            an error result and the run goes on.
        max_tool_calls: tool calls run per answer (None: all); later calls are
            answered with an error result.
        max_tool_argument_chars: longest argument JSON of a call that runs, in
            characters (None: no limit).
        max_tool_result_chars: longest tool result sent to the model, in
            characters; a longer one is cut and says so (None: no limit).
        max_tool_result_bytes: most bytes of a tool result's media parts (images,
            documents, audio) sent to the model; parts past it are left out and
            the result's text says so (None: no limit).
        reasoning: one reasoning setting for every provider: an effort level
            (``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``,
            ``"xhigh"``, ``"max"``) or a thinking budget in tokens (an int),
            written as the vendor row says (:func:`zett_agent.vendors.reasoning_fields`);
            a setting the row does not take is a ConfigError before sending.
        server_tools: tools the provider runs (:class:`~zett_agent.vendors.ServerTool`:
            web search, code execution, URL fetch), declared beside the agent's own.
        prompt_cache: place prompt-cache breakpoints on the stable prefix where
            the protocol has them (Anthropic: tools, system, the history so far).
        prompt_cache_key: OpenAI's ``prompt_cache_key`` (sent on rows that take it).
        cost: price each answer (``AssistantMessage.cost``) and the run
            (``RUN_COMPLETED.cost``) with the ``prices`` extra (genai-prices).
        max_cost: end the run, as ``max_turns`` does, once its answers cost this
            many US dollars (``stop.raw == "max_cost"``); a model with an unknown
            price is a ConfigError before anything is sent. Implies ``cost``.
        max_total_tokens: end the run once its calls used this many input plus
            output tokens (``stop.raw == "max_total_tokens"``).
            Both budgets count every model call the run causes (fallback
            attempts, summaries, MCP sampling, subagents and background runs:
            :mod:`zett_agent.model._budgets`); an answer without usage under a
            budget ends the run with that budget's stop (unknown is never 0).
        finish_tools_over_budget: run the tool calls of the answer that crossed
            a budget (default False: they never start, each is answered "not
            run: the run's budget was reached" and
            ``stop.detail["not_run_tool_calls"]`` names them).
        output_mode: how a typed result (``output_type``) is asked for:
            ``"auto"`` (the vendor row's native mode, else a forced output tool),
            ``"native"`` (a ConfigError on a row without one) or ``"tool"``.
        output_retries: retries of an answer that ended normally and failed
            validation (each is a model call and counts against ``max_turns``);
            then :class:`~zett_agent.errors.OutputValidationError`.
        output_validators: host functions given the validated value, run after
            the schema, in order: each returns the value to keep (None: as it
            is) or raises :class:`~zett_agent.OutputRetry` to have the
            answer retried with its message (may be ``async``).
        input_guardrails: checks of the run's prompt (sync or async callables
            given the :class:`~zett_agent.UserMessage`, agents, or
            :class:`~zett_agent.Guardrail`), run concurrently with the first
            model call; no tool call of that answer starts before all passed.
            Each returns None to pass or a :class:`~zett_agent.Tripwire`; a
            tripwire ends the run with a REFUSAL stop, ``raw ==
            "guardrail:<name>"`` (:mod:`zett_agent._guardrails`).
        output_guardrails: checks of the answer that would end the run
            normally (an :class:`~zett_agent.AssistantMessage`; run after
            ``output_validators``, before stop hooks), with the same verdicts.
    """

    name: str = "agent"
    instructions: str | None = None
    max_turns: int = 20
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    reset_tool_choice: bool = True
    parallel_tools: bool = True
    model_options: dict[str, Any] = field(default_factory=dict)
    telemetry: bool = True
    tracer_provider: Any = None
    approval: ApprovalPolicy | None = None
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    max_tool_calls: int | None = DEFAULT_MAX_TOOL_CALLS
    max_tool_argument_chars: int | None = DEFAULT_MAX_TOOL_ARGUMENT_CHARS
    max_tool_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS
    max_tool_result_bytes: int | None = DEFAULT_MAX_TOOL_RESULT_BYTES
    reasoning: str | int | None = None
    server_tools: Sequence[ServerTool] = ()
    prompt_cache: bool = True
    prompt_cache_key: str | None = None
    cost: bool = False
    max_cost: float | None = None
    max_total_tokens: int | None = None
    output_mode: OutputMode = "auto"
    output_retries: int = DEFAULT_OUTPUT_RETRIES
    output_validators: Sequence[OutputValidator] = ()
    input_guardrails: Sequence[Any] = ()
    output_guardrails: Sequence[Any] = ()
    finish_tools_over_budget: bool = False
