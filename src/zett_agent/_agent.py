"""The agent loop: send the conversation, act on why the model stopped, repeat.

After each model call the loop takes one of a small closed set of decisions
(:class:`Step`), read from the normalized :class:`~zett_agent.stop.StopReason`
and from the content (tool calls run when the content holds them, whatever the
label says, except under REFUSAL and INTERRUPTED):

=============  ==========================================================
REFUSAL,       withhold tool calls (never started; names in
INTERRUPTED    ``stop.detail["withheld_tool_calls"]``), end, report
PAUSED         continue, up to ``Agent.max_pause_continuations``, silently (no
               MODEL_STOPPED); then report. A pause whose content holds client
               tool calls runs them and counts as a continuation: that step is a
               tool step (stop None, the raw value in ``detail["paused"]``); out
               of continuations, its calls run and the run ends, reported
MAX_OUTPUT,    report; complete tool calls run, calls with cut-off arguments
CONTEXT_FULL   get an error result, and the model gets its turn again;
               no tool calls: end
OTHER          report, and carry on (run tools, or complete)
END_TURN,      run tools if any, else complete (a stop hook may veto)
TOOL_USE
=============  ==========================================================

Tool calls that wait for a person's approval (a tool's ``requires_approval``, or
``AgentRunConfig.approval``): the answer's other calls run, then the run ends with
them pending (``RUN_COMPLETED.approval``, :attr:`Agent.pending_approval`) until
:meth:`Agent.approve` answers them (:mod:`zett_agent.approvals`).

Cancelled (a cancel scope, task cancellation, or the consumer closing
``agent.stream``) while a model call streams: the output received so far (maybe
none) is stored as an answer with stop INTERRUPTED, ``detail["cancelled"] =
True`` (its tool calls withheld), in a shielded write; while tools run: the
results that finished are stored, and each unfinished call gets an error result
saying the run was cancelled during it. Then the cancellation propagates.

``max_turns`` used up: the run's final message is an empty answer whose stop is
OTHER with ``raw == "max_turns"``; it is stored (so a session shows why the run
ended) and never sent to a model.

:meth:`Agent.resume` continues a conversation whose last answer stopped as
INTERRUPTED or MAX_OUTPUT (see :func:`plan_resume`); REFUSAL and CONTEXT_FULL
cannot be resumed (:class:`~zett_agent.errors.ResumeError`).

Recovery: after each model call (and after a call that failed with no output)
extensions are asked ``recover(context)``; the first answer is one of a closed
set (RETRY another request, CONTINUE with added messages, END with a stop) that
the loop performs and records on the stored answer's stop
(:meth:`RunRecoveries.apply <zett_agent._recovery.RunRecoveries.apply>`, see
:mod:`zett_agent._recovery`). Without such an extension nothing changes: the core
never works around a stop by itself. Answers a retry superseded stay in history
and are never sent again.

Typed results (``output_type=`` on :func:`create_agent` or per run): the answer
is asked for in the provider's native structured mode or with a forced output
tool, and judged after the stop: an abnormal stop ends the run as above, with
nothing validated and no retry; only an answer that ended normally and fails
validation is retried with the errors sent back, up to
``AgentRunConfig.output_retries``, then
:class:`~zett_agent.errors.OutputValidationError` (:mod:`zett_agent._structured`).
The value is ``message.output`` and ``RUN_COMPLETED.output``.

Guards: ``max_turns`` model calls per run (the run then completes with
``stop.raw == "max_turns"``; retries count), the model's idle timeout, stop hooks
(extensions' ``on_complete``). One structured log record per model call goes to
the ``zett_agent.steps`` logger, and OpenTelemetry spans are made when the
``otel`` extra is installed (both in :mod:`zett_agent._telemetry`).

Where it is: this module is the public face (:class:`AgentRunConfig`,
:class:`Agent`, :func:`create_agent`). The loop itself, with this table as
``_Run._decide`` and :class:`Step`, is :mod:`zett_agent._loop`; a run's messages
are kept by :mod:`zett_agent._conversation`, its recoveries by
:mod:`zett_agent._recovery`, and its tool calls pass the gate of :mod:`zett_agent.tools._gate`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing
from functools import lru_cache
from typing import Any, Generic, Self, overload

from typing_extensions import TypeVar

from zett_agent._config import AgentRunConfig
from zett_agent._events import AgentEvent, AgentEventDispatcher, AgentEventType, final_message
from zett_agent._loop import MAX_TURNS_RAW, Step, _Run
from zett_agent._messages import AssistantMessage, Message, UserMessage
from zett_agent._output import output_type_of
from zett_agent._resume import CONTINUE_PROMPT, ResumePlan, plan_resume
from zett_agent._structured import StructuredRun
from zett_agent._sync import iterate_sync, run_sync
from zett_agent.errors import ResumeError
from zett_agent.extensions._extension import Extension
from zett_agent.model._model import ModelClient, resolve_model
from zett_agent.tools._approvals import (
    ApprovalRequest,
    Decision,
    PendingApprovalError,
    decided_results,
)
from zett_agent.tools._definition import Tool, as_tool
from zett_agent.tools._outcomes import ToolJournal

__all__ = ["MAX_TURNS_RAW", "Agent", "AgentRunConfig", "Step", "create_agent", "create_agent_sync"]

_E = AgentEventType

OutputT = TypeVar("OutputT", default=Any)
"""The type of an agent's typed results (``Agent[City]``); ``None`` for an agent
without an ``output_type``, ``Any`` for a JSON-schema dict or when not said."""
_R = TypeVar("_R")
"""A run's own ``output_type=``."""


class Agent(Generic[OutputT]):
    """Runs a model with tools. Make one with :func:`create_agent`.

    ``messages`` is the conversation so far: each :meth:`run` / :meth:`stream`
    continues it unless given ``history=``. ``output_type``: the type of every
    run's final answer (a pydantic model, dataclass, TypedDict, scalar,
    ``list[...]``, union, or a JSON schema dict; :mod:`zett_agent._output`), None
    for text; a run's own ``output_type=`` wins.

    For type checkers the agent is generic in that type: ``output_type=City``
    makes an ``Agent[City]`` whose :meth:`run` returns
    ``AssistantMessage[City]``, and ``run(..., output_type=Town)`` an
    ``AssistantMessage[Town]``. An agent without one is an ``Agent[None]`` (its
    answers' ``output`` is None, and saying so lets a checker flag a read of
    it); an output type that is not a class (a JSON-schema dict, a union,
    ``Annotated[...]``) gives ``Agent[Any]``, as does a bare ``Agent``
    annotation. Nothing changes at run time.
    """

    max_pause_continuations: int = 5
    """PAUSED steps continued automatically per run before the pause is reported."""

    continue_prompt: str = CONTINUE_PROMPT
    """The user turn :meth:`resume` sends when the protocol cannot take a prefill."""

    guardrails_before_model: bool = False
    """Check the input guardrails before the first model call, and every
    guardrail one after another, instead of beside it (a durable run sets it: its
    steps must keep their order on replay)."""

    @overload
    def __init__(
        self: Agent[None],
        model: ModelClient,
        config: AgentRunConfig | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        extensions: Sequence[Extension] = (),
        *,
        output_type: None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: Agent[OutputT],
        model: ModelClient,
        config: AgentRunConfig | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        extensions: Sequence[Extension] = (),
        *,
        output_type: type[OutputT],
    ) -> None: ...
    @overload
    def __init__(
        self: Agent[Any],
        model: ModelClient,
        config: AgentRunConfig | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        extensions: Sequence[Extension] = (),
        *,
        output_type: object,
    ) -> None: ...
    def __init__(
        self,
        model: ModelClient,
        config: AgentRunConfig | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        extensions: Sequence[Extension] = (),
        *,
        output_type: Any = None,
    ) -> None:
        self.model = model
        self.config = config or AgentRunConfig()
        self.output_type = None if output_type is None else output_type_of(output_type)
        self.tools = {tool.name: tool for tool in map(_tool, tools)}
        self.extensions = list(extensions)
        self.messages: list[Message] = []
        self.pending_approval: ApprovalRequest | None = None
        """The calls of ``messages`` waiting for a decision (see :meth:`approve`)."""

    async def aclose(self) -> None:
        """Close the model (its HTTP client, and a local server it started)."""
        await self.model.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------ the sync API

    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """:meth:`run` for code without an event loop (or inside one it must not
        block on, a notebook's): run on the process's private loop thread
        (:mod:`zett_agent._sync`); the same parameters, result, stops and
        exceptions. Ctrl-C cancels the run (the answer so far stored as
        INTERRUPTED) and raises ``KeyboardInterrupt``."""
        return run_sync(
            lambda: self.run(
                prompt, history=history, dispatcher=dispatcher, output_type=output_type
            )
        )

    def stream_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        on_message: Callable[[Message], Any] | None = None,
        run_id: str | None = None,
        journal: ToolJournal | None = None,
        output_type: Any = None,
    ) -> Iterator[AgentEvent]:
        """:meth:`stream` as a plain iterator of the same events (on the private
        loop thread, where ``on_message`` is called too); leaving it early closes
        the run as closing the async stream does."""
        return iterate_sync(
            lambda: self.stream(
                prompt,
                history=history,
                on_message=on_message,
                run_id=run_id,
                journal=journal,
                output_type=output_type,
            )
        )

    @overload
    def resume_sync(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    def resume_sync(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    def resume_sync(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    def resume_sync(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """:meth:`resume` on the private loop thread (the same parameters and result)."""
        return run_sync(
            lambda: self.resume(history=history, dispatcher=dispatcher, output_type=output_type)
        )

    def close_sync(self) -> None:
        """:meth:`aclose` on the private loop thread (where the sync calls ran)."""
        run_sync(self.aclose)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()

    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """Run to the end and return the final assistant message.

        ``prompt`` is text, or a :class:`~zett_agent.UserMessage` whose
        ``parts`` carry images, documents or audio (:mod:`zett_agent._parts`; a
        part the provider cannot take is a ConfigError before anything is sent).

        Never raises for a refusal or another abnormal stop: check
        ``message.stop`` or call ``message.raise_for_stop()``. Raises
        :class:`~zett_agent.errors.ProviderError` /
        :class:`~zett_agent.errors.TransportError` when a call fails with no
        output after its retries. With an ``output_type`` (here or the agent's),
        the typed value is ``message.output``; an answer that ended normally and
        stayed invalid after its retries raises
        :class:`~zett_agent.errors.OutputValidationError`.
        """
        events = self.stream(prompt, history=history, output_type=output_type)
        return await final_message(events, dispatcher)

    async def stream(
        self,
        prompt: str | UserMessage | None,
        *,
        history: Sequence[Message] | None = None,
        on_message: Callable[[Message], Any] | None = None,
        run_id: str | None = None,
        journal: ToolJournal | None = None,
        output_type: Any = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run and yield :class:`~zett_agent.AgentEvent` values as they happen.

        ``prompt`` (text or a :class:`~zett_agent.UserMessage`, as in
        :meth:`run`); None runs on the history as it is (to continue it).
        ``on_message`` is called (and awaited if async) with each message as soon
        as it is complete, for durable storage. ``run_id`` names the run in events,
        logs and spans (default: a random 12-hex id); a durable engine passes one
        derived from its workflow id so a replayed run has the same one.
        ``journal`` records that tool calls start and knows the starts the
        history recorded (:mod:`zett_agent.tools._outcomes`; a session store's
        :class:`~zett_agent.sessions.SessionJournal`, passed by
        :class:`~zett_agent.AgentClient`); None: nothing is recorded. Raises
        :class:`~zett_agent.approvals.PendingApprovalError` when ``messages`` has
        calls waiting for approval (answer them with :meth:`approve`).
        """
        if history is None:
            self._check_no_pending()
        messages = list(self.messages if history is None else history)
        structured = self._structured(output_type)
        run = _Run(
            self, messages, on_message, run_id=run_id, journal=journal, structured=structured
        )
        # the loop's events are yielded from here, not through another generator
        # (one hop per chunk less); aclosing: closing this generator closes
        # run.events() at once, so a cancelled model call is stored before the
        # close returns.
        try:
            async with aclosing(run.events(prompt)) as events:
                async for event in events:
                    yield event
        finally:
            if history is None:
                self.messages = run.conversation.messages
                self.pending_approval = run.pending

    @overload
    async def resume(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    async def resume(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    async def resume(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    async def resume(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """Continue the conversation (``messages``, or ``history``) whose last answer
        was cut off, and return the final assistant message (a structured answer
        cut at MAX_OUTPUT is validated joined to its continuation).

        How it continues is in :func:`plan_resume`. Raises
        :class:`~zett_agent.errors.ResumeError` when there is nothing to resume or
        the last answer was a REFUSAL or CONTEXT_FULL; otherwise as :meth:`run`.
        """
        events = self.resume_stream(history=history, output_type=output_type)
        return await final_message(events, dispatcher)

    async def resume_stream(
        self,
        *,
        history: Sequence[Message] | None = None,
        on_message: Callable[[Message], Any] | None = None,
        on_replace: Callable[[int, Message], Any] | None = None,
        journal: ToolJournal | None = None,
        output_type: Any = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """:meth:`resume`, yielding events as :meth:`stream` does.

        ``on_message`` is called with each new message; ``on_replace(index,
        message)`` (awaited if async) when the first answer takes the place of the
        cut-off answer at ``index`` of the conversation (a joined prefill
        continuation, or a retry of an answer with no text). ``journal`` as in
        :meth:`stream`: a call of the last answer that it recorded as started and
        that has no result runs again if its tool is idempotent, and is answered
        "may or may not have taken effect" otherwise. ResumeError is raised when
        iteration starts, before anything is sent.
        """
        if history is None:
            self._check_no_pending()
        messages = list(self.messages if history is None else history)
        plan = plan_resume(messages, self.model, self.continue_prompt)
        structured = self._structured(output_type, _continued_text(messages, plan))
        run = _Run(
            self,
            messages,
            on_message,
            on_replace=on_replace,
            plan=plan,
            journal=journal,
            structured=structured,
        )
        try:  # as in stream()
            async with aclosing(run.events(plan.prompt)) as events:
                async for event in events:
                    yield event
        finally:
            if history is None:
                self.messages = run.conversation.messages
                self.pending_approval = run.pending

    async def approve(
        self,
        decisions: Mapping[str, Decision],
        *,
        history: Sequence[Message] | None = None,
        pending: ApprovalRequest | None = None,
        dispatcher: AgentEventDispatcher | None = None,
    ) -> AssistantMessage[OutputT]:
        """Answer the calls waiting for approval and go on: approved calls run,
        denied ones get an error result with the reason, then the model gets its
        turn. ``decisions`` holds one :class:`~zett_agent.approvals.Decision` per
        pending call id. Returns the final message (which may wait for approval
        again: see ``pending_approval``).

        ``pending`` and ``history`` default to ``pending_approval`` and
        ``messages``. Raises :class:`~zett_agent.errors.ResumeError` when nothing
        waits, ``ValueError`` when a pending call has no decision or a decision
        names no pending call (before anything runs)."""
        events = self.approve_stream(decisions, history=history, pending=pending)
        return await final_message(events, dispatcher)

    async def approve_stream(
        self,
        decisions: Mapping[str, Decision],
        *,
        history: Sequence[Message] | None = None,
        pending: ApprovalRequest | None = None,
        on_message: Callable[[Message], Any] | None = None,
        journal: ToolJournal | None = None,
        run_id: str | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """:meth:`approve`, yielding events as :meth:`stream` does (``journal`` and
        ``run_id`` as there)."""
        request = pending if pending is not None else self.pending_approval
        if request is None:
            raise ResumeError("no tool calls are waiting for approval")
        decided_results(request, decisions)  # ValueError before anything runs
        messages = list(self.messages if history is None else history)
        run = _Run(
            self,
            messages,
            on_message,
            decided=(request, dict(decisions)),
            journal=journal,
            run_id=run_id,
            structured=self._structured(None),
        )
        if history is None:
            self.pending_approval = None
        try:  # as in stream()
            async with aclosing(run.events(None)) as events:
                async for event in events:
                    yield event
        finally:
            if history is None:
                self.messages = run.conversation.messages
                self.pending_approval = run.pending

    def _structured(self, output_type: Any, prefix: str = "") -> StructuredRun | None:
        """A run's structured output: ``output_type``, else the agent's; None for text."""
        chosen = self.output_type if output_type is None else output_type_of(output_type)
        if chosen is None:
            return None
        config = self.config
        return StructuredRun(
            chosen,
            mode=config.output_mode,
            retries=config.output_retries,
            validators=tuple(config.output_validators),
            prefix=prefix,
        )

    def _check_no_pending(self) -> None:
        if self.pending_approval is not None:
            names = ", ".join(c.name for c in self.pending_approval.calls)
            raise PendingApprovalError(
                f"tool calls wait for approval ({names}): answer them with approve() first",
                self.pending_approval.calls,
            )


@overload
async def create_agent(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: None = None,
    **model_options: Any,
) -> Agent[None]: ...
@overload
async def create_agent(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: type[_R],
    **model_options: Any,
) -> Agent[_R]: ...
@overload
async def create_agent(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: object,
    **model_options: Any,
) -> Agent[Any]: ...
async def create_agent(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: Any = None,
    **model_options: Any,
) -> Agent[Any]:
    """Make an :class:`Agent`.

    ``model`` is a model object or ``"provider:model-name"``
    (``"anthropic:claude-sonnet-4-5"``, ``"openrouter:google/gemini-2.5-flash"``);
    ``model_options`` (``base_url=``, ``api_key=``, ``idle_timeout=``...) go to
    :class:`~zett_agent.model.Model` when a string is given. ``output_type``:
    the type of the runs' final answers (see :class:`Agent`: ``Agent[City]`` for
    ``output_type=City``, ``Agent[None]`` without one). Raises
    :class:`~zett_agent.errors.ConfigError` for an unknown provider or a missing
    key, or an ``output_type`` pydantic cannot make a JSON schema of.
    """
    resolved = resolve_model(model, **model_options) if isinstance(model, str) else model
    return Agent(resolved, config, tools, extensions, output_type=output_type)


@overload
def create_agent_sync(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: None = None,
    **model_options: Any,
) -> Agent[None]: ...
@overload
def create_agent_sync(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: type[_R],
    **model_options: Any,
) -> Agent[_R]: ...
@overload
def create_agent_sync(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: object,
    **model_options: Any,
) -> Agent[Any]: ...
def create_agent_sync(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    output_type: Any = None,
    **model_options: Any,
) -> Agent[Any]:
    """:func:`create_agent` for code without an event loop (the same parameters
    and result); the agent is made on the private loop thread its ``*_sync``
    calls run on (:mod:`zett_agent._sync`). ``with create_agent_sync(...) as
    agent:`` closes it at the end."""
    return run_sync(
        lambda: create_agent(
            model,
            config,
            tools=tools,
            extensions=extensions,
            output_type=output_type,
            **model_options,
        )
    )


def _continued_text(messages: Sequence[Message], plan: ResumePlan) -> str:
    """The cut-off text the resumed answer goes on from, which a structured answer
    is validated joined to: the prefill's text (Anthropic continues it), or the
    cut-off answer a continuation turn follows."""
    if plan.prefill is not None:
        return plan.prefill.text
    if plan.prompt is None or not messages:
        return ""
    last = messages[-1]
    return last.text if isinstance(last, AssistantMessage) else ""


def _tool(function: Callable[..., Any] | Tool) -> Tool:
    """:func:`~zett_agent.tools.as_tool`, remembered per function: building the
    argument model (pydantic ``create_model``) took most of ``create_agent``, and
    an application makes an agent per request with the same functions."""
    if isinstance(function, Tool):
        return function
    try:
        hash(function)
    except TypeError:  # an unhashable callable object
        return as_tool(function)
    return _cached_tool(function)


@lru_cache(maxsize=1024)
def _cached_tool(function: Callable[..., Any]) -> Tool:
    return as_tool(function)
