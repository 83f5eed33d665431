"""The one accumulator: decoded pieces become a :class:`~zett_agent.ModelResponse`.

:class:`ResponseBuilder` is where text, reasoning and tool-call fragments (keyed by
whatever the wire uses) become a message, and where the rules every protocol shares
hold: the content decides between END_TURN and TOOL_USE, a call the wire did not
close is named in ``detail["cut_tool_calls"]``, repeated argument fragments are
read once or make the answer INTERRUPTED (:mod:`._arguments`), and
:func:`apply_output_limit` reads a cut the label does not say.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from zett_agent._exchange import (
    AMBIGUOUS_TOOL_ARGUMENTS,
    CUT_TOOL_CALLS,
    ModelResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from zett_agent._messages import (
    ToolCall,
    Usage,
)
from zett_agent.protocols._arguments import ArgumentText, Shape
from zett_agent.stop import StopInfo, StopReason


class _CallAccumulator:
    __slots__ = ("arguments", "closed", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name: str | None = None
        self.arguments = ArgumentText()
        self.closed: bool | None = None  # None: the wire does not say (see build)


class Pieces:
    """Text that arrives in pieces. Every 512 pieces are joined into one string (each
    piece is copied once: linear), so a long stream of small deltas costs about the
    size of its text, not ~60 bytes of object header per delta."""

    __slots__ = ("_limit", "_parts")
    RUN = 512

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._limit = self.RUN  # the length at which the loose pieces are joined

    def append(self, piece: str) -> None:
        parts = self._parts
        parts.append(piece)
        if len(parts) == self._limit:
            parts[-self.RUN :] = ["".join(parts[-self.RUN :])]
            self._limit = len(parts) + self.RUN

    def join(self) -> str:
        return "".join(self._parts)

    def __bool__(self) -> bool:
        return bool(self._parts)


class ResponseBuilder:
    """Accumulates decoded pieces into a :class:`ModelResponse`.

    Tool calls are keyed by whatever identifies a call on the wire (an index, an
    item id, a content-block index); their order is the order keys first appear.
    """

    def __init__(self) -> None:
        self._text = Pieces()
        self._reasoning = Pieces()
        self._calls: dict[Hashable, _CallAccumulator] = {}
        self.usage = Usage()
        self.model: str | None = None

    # -- adding
    def text(self, piece: str) -> list[StreamEvent]:
        """Add answer text; returns the event to emit (none for an empty piece)."""
        if not piece:
            return []
        self._text.append(piece)
        return [TextDelta(piece)]

    def reasoning(self, piece: str) -> list[StreamEvent]:
        """Add reasoning text; returns the event to emit (none for an empty piece)."""
        if not piece:
            return []
        self._reasoning.append(piece)
        return [ReasoningDelta(piece)]

    def tool_call(
        self,
        key: Hashable,
        *,
        id: str | None = None,  # noqa: A002 - the wire field name
        name: str | None = None,
        arguments: str | None = None,
    ) -> list[StreamEvent]:
        """Start or extend the tool call identified by ``key``.

        ``id``/``name`` fill in when not yet known (an empty string counts as
        unknown); ``arguments`` is appended.
        """
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _CallAccumulator(len(self._calls))
        new_id = id if id and not call.id else None
        new_name = name if name and not call.name else None
        if new_id:
            call.id = new_id
        if new_name:
            call.name = new_name
        if arguments:
            call.arguments.append(arguments)
        if new_id is None and new_name is None and not arguments:
            return []
        return [ToolCallDelta(call.index, new_id, new_name, arguments or "")]

    def has_tool_call(self, key: Hashable) -> bool:
        return key in self._calls

    def close_call(self, key: Hashable, closed: bool | None = True) -> None:
        """Record whether the wire finished the call ``key`` (``closed=False``: it
        started and was never finished). A call no decoder marks (or marked None)
        is judged by the stop (see :meth:`build`)."""
        call = self._calls.get(key)
        if call is not None:
            call.closed = closed

    def read_arguments(self, key: Hashable) -> tuple[str, Shape | None] | None:
        """The argument text of call ``key`` as :meth:`tool_calls` reads it, and the
        repeated shape found (None: no such call), for a decoder's provider record."""
        call = self._calls.get(key)
        return call.arguments.read() if call is not None else None

    def call_closed(self, key: Hashable) -> bool | None:
        """What :meth:`close_call` recorded for ``key`` (None: nothing, or no such call)."""
        call = self._calls.get(key)
        return call.closed if call is not None else None

    def tool_call_id(self, key: Hashable) -> str | None:
        call = self._calls.get(key)
        return call.id if call else None

    def set_usage(self, usage: Usage) -> None:
        """Replace the usage (providers that report cumulative or last-wins usage)."""
        self.usage = usage

    # -- reading
    @property
    def has_output(self) -> bool:
        """Whether any text, reasoning or tool call has arrived."""
        return bool(self._text or self._reasoning or self._calls)

    @property
    def current_text(self) -> str:
        return self._text.join()

    @property
    def current_reasoning(self) -> str:
        return self._reasoning.join()

    def tool_calls(self, *, truncated: bool = False) -> tuple[ToolCall, ...]:
        """The calls so far, in order, their arguments read as
        :meth:`~zett_agent.protocols._arguments.ArgumentText.read` reads them (an
        exact repeat or cumulative fragments give the arguments once). ``closed`` is
        what the wire said; a call it said nothing about is closed, except under an
        output limit (``truncated``, see :meth:`build`)."""
        calls = [
            ToolCall(
                id=c.id or f"call_{c.index}",
                name=c.name or "",
                arguments=c.arguments.read()[0] or "{}",
                closed=c.closed is not False,
            )
            for c in self._calls.values()
        ]
        if truncated:
            unknown = [n for n, c in enumerate(self._calls.values()) if c.closed is None]
            for n, call in enumerate(calls):
                if call.closed and (
                    (unknown and n == unknown[-1]) or not is_json_object(call.arguments)
                ):
                    calls[n] = replace(call, closed=False)
        return tuple(calls)

    def build(
        self,
        stop_info: StopInfo,
        provider_record: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        """The response, with these rules applied the same way for every protocol:

        * which calls the wire did not finish (``ToolCall.closed`` False): those a
          decoder marked open; under an output limit (MAX_OUTPUT, CONTEXT_FULL) also
          the last call the wire said nothing about (a Chat ``length`` answer cut
          the call being generated) and any call whose arguments are not a JSON
          object. ``detail["cut_tool_calls"]`` names them;
        * a call left open under a label that is not a limit (an Anthropic
          ``tool_use`` block with no ``content_block_stop`` under ``tool_use``) makes
          the answer broken: INTERRUPTED, raw kept, so no tool of it runs
          (ARCHITECTURE.md says why this reason);
        * argument fragments that repeat themselves (:mod:`~zett_agent.protocols._arguments`):
          an exact repeat or cumulative fragments give the arguments once, named in
          ``detail["repeated_tool_arguments"]`` / ``["cumulative_tool_arguments"]``;
          an ambiguous repeat (a complete JSON value followed by more) is never
          guessed at: the answer is INTERRUPTED (raw kept, so the loop withholds its
          calls) with ``detail["ambiguous_tool_arguments"]`` naming the calls;
        * the content decides between the normal ends (seed 003): END_TURN with
          tool calls is TOOL_USE, TOOL_USE without any is END_TURN (raw kept);
        * ``category`` is None for a normal end; for an abnormal stop without a
          policy category it is the raw value (seed 002: "the provider's policy
          category where there is one and otherwise the raw value").
        """
        calls = self.tool_calls(truncated=stop_info.truncated)
        stop_info = _with_cut_calls(stop_info, calls)
        if self._calls:
            shapes = [c.arguments.read()[1] for c in self._calls.values()]
            stop_info = _with_shapes(stop_info, calls, shapes)
        if stop_info.ok:
            reason = StopReason.TOOL_USE if calls else StopReason.END_TURN
            if reason is not stop_info.reason or stop_info.category is not None:
                stop_info = replace(stop_info, reason=reason, category=None)
        elif stop_info.category is None and stop_info.raw:
            stop_info = replace(stop_info, category=stop_info.raw)
        return ModelResponse(
            text=self._text.join(),
            tool_calls=calls,
            stop_info=stop_info,
            usage=self.usage,
            reasoning=self._reasoning.join(),
            model=self.model,
            provider_record=provider_record,
        )


def _with_cut_calls(info: StopInfo, calls: Sequence[ToolCall]) -> StopInfo:
    """``info`` naming the open calls; INTERRUPTED when a normal end left one open."""
    cut = [c.name for c in calls if not c.closed]
    if not cut:
        return info
    if info.ok:
        return StopInfo(
            StopReason.INTERRUPTED,
            info.raw,
            message="the provider ended the answer with a tool call it did not finish: "
            + ", ".join(cut),
            detail={**info.detail, CUT_TOOL_CALLS: cut},
        )
    return info.with_detail(**{CUT_TOOL_CALLS: cut})


_WITHHOLDING = frozenset({StopReason.REFUSAL, StopReason.INTERRUPTED})


def _with_shapes(
    info: StopInfo, calls: Sequence[ToolCall], shapes: Sequence[Shape | None]
) -> StopInfo:
    """``info`` naming the calls whose fragments repeated (``shapes``: each call's);
    INTERRUPTED for an ambiguous one that would otherwise run (a cut call never runs
    anyway)."""
    detail: dict[str, list[str]] = {}
    for call, shape in zip(calls, shapes, strict=True):
        if shape is not None:
            detail.setdefault(f"{shape}_tool_arguments", []).append(call.name)
    if not detail:
        return info
    ambiguous = detail.get(AMBIGUOUS_TOOL_ARGUMENTS, [])
    would_run = any(s == "ambiguous" and c.closed for c, s in zip(calls, shapes, strict=True))
    if would_run and info.reason not in _WITHHOLDING:
        return StopInfo(
            StopReason.INTERRUPTED,
            info.raw,
            message="the provider sent tool-call arguments that repeat in a way that "
            "cannot be read without guessing: " + ", ".join(ambiguous),
            detail={**info.detail, **detail},
        )
    return info.with_detail(**detail)


def apply_output_limit(response: ModelResponse, max_tokens: int | None) -> ModelResponse:
    """``response`` judged against the output limit that was requested.

    A label that says tools (TOOL_USE: ``tool_calls``, ``tool_use``, or a normal end
    with calls) over arguments that are not a JSON object, with ``usage.output_tokens``
    equal to ``max_tokens``, was cut by the limit (vLLM-served models say
    ``tool_calls`` for arguments the limit truncated, WIRE.md "STOP / stop with
    tools"): the result is MAX_OUTPUT with ``raw`` kept, those calls open, and
    ``detail["cut_tool_calls"]`` and ``detail["max_tokens"]`` set. Anything else is
    returned unchanged. The loop applies it to every answer (it knows the request);
    ``zett inspect --max-tokens`` does the same.
    """
    info = response.stop_info
    if (
        max_tokens is None
        or info.reason is not StopReason.TOOL_USE
        or response.usage.output_tokens != max_tokens
    ):
        return response
    calls = tuple(
        c if not c.closed or is_json_object(c.arguments) else replace(c, closed=False)
        for c in response.tool_calls
    )
    if calls == response.tool_calls:
        return response
    cut = [c.name for c in calls if not c.closed]
    info = StopInfo(
        StopReason.MAX_OUTPUT,
        info.raw,
        info.raw,  # no policy category: the raw value (seed 002)
        f"the output limit of {max_tokens} tokens cut a tool call: " + ", ".join(cut),
        None,
        {**info.detail, CUT_TOOL_CALLS: cut, "max_tokens": max_tokens},
    )
    return replace(response, tool_calls=calls, stop_info=info)


def is_json_object(text: str) -> bool:
    """Whether ``text`` parses as a JSON object (empty text counts as ``{}``)."""
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except (ValueError, RecursionError):
        return False
