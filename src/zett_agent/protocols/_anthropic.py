"""Anthropic Messages (``POST /v1/messages``): request encoding and a sans-IO decoder.

The stop mapping follows Anthropic's "Handling stop reasons" guide
(https://docs.anthropic.com/en/api/handling-stop-reasons) and the stream layout
follows the streaming guide (https://docs.anthropic.com/en/api/messages-streaming):
``message_start``, ``content_block_start``/``_delta``/``_stop``, ``message_delta``
(the only place a streamed ``stop_reason``, ``stop_details`` and cumulative usage
appear), ``message_stop``, ``ping`` and ``error``. See also
``../shared/corpus/WIRE.md`` section 1.

``pause_turn`` and the beta ``compaction`` (the server compacted the context, with
``pause_after_compaction``, and returns the compaction block) are PAUSED: the loop
continues them by sending the content back. A ``compaction_delta`` sets its block's
``content`` and ``encrypted_content``, as the SDK's accumulator does.

The assistant message's content blocks (thinking with signatures, ``server_tool_use``,
``web_search_tool_result``, ``compaction``...) are kept as ``{"protocol": "anthropic", "content":
[...]}`` in ``provider_record`` and replayed unchanged. A non-streaming body is
decoded by replaying it as the events a stream of the same content would carry,
so both paths give the same :class:`ModelResponse`.

A ``tool_use`` block is open until its ``content_block_stop`` (``ToolCall.closed``); an
open call never runs. A body has no block events: its last block, when it is a tool
call, is judged by the stop (cut under ``max_tokens``, see ``ResponseBuilder.build``).

Content parts (anthropic ``ImageBlockParam``, ``DocumentBlockParam``): an image is an
``image`` block whose ``source`` is ``base64`` (media type + data) or ``url``; a PDF
is a ``document`` block (``base64`` or ``url`` source, ``title`` = the part's name),
plain text a ``document`` with a ``text`` source. A user message with parts sends
its text as the first ``text`` block. A tool result with parts sends
``tool_result.content`` as a list: its text, then the image and document blocks
(``ToolResultBlockParam.content`` takes both). No audio.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import (
    TOO_DEEP,
    AssistantMessage,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._messages import Usage as TokenUsage
from zett_agent._parts import MediaPart, Part, TextPart
from zett_agent.errors import ConfigError
from zett_agent.protocols._base import Decoder, ErrorFields, ErrorShape, WireProtocol
from zett_agent.protocols._body import (
    add_settings,
    as_dict,
    as_int,
    as_text,
    load_json,
    merge_options,
    parse_json,
    raw_value,
    result_parts,
    stop,
    user_parts,
)
from zett_agent.protocols._builder import Pieces
from zett_agent.protocols._sendable import sendable_record
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import Vendor

__all__ = ["STOP_REASONS", "AnthropicDecoder", "AnthropicMessages"]

STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_OUTPUT,
    "pause_turn": StopReason.PAUSED,
    # beta (BetaStopReason, context management with pause_after_compaction): the
    # server compacted the context and hands the compaction block back; sending the
    # content back continues the turn, as for pause_turn
    "compaction": StopReason.PAUSED,
    "refusal": StopReason.REFUSAL,
    "model_context_window_exceeded": StopReason.CONTEXT_FULL,
}
"""Anthropic ``stop_reason`` -> :class:`StopReason`: every value of the anthropic SDK's
``StopReason`` and ``BetaStopReason`` is a key (``tests/test_stop_tables_match_the_sdks.py``).
A vendor's ``finish_reasons`` override and extend it; any other value is OTHER with the
raw value kept."""

DEFAULT_MAX_TOKENS = 4096
"""Sent when ``ModelRequest.max_tokens`` is None (Anthropic requires the field)."""

_TOOL_CHOICE: Mapping[str, dict[str, str]] = {
    "auto": {"type": "auto"},
    "none": {"type": "none"},
    "required": {"type": "any"},
}
_STOP_DETAIL_FIELDS = frozenset({"type", "category", "explanation", "recommended_model"})


NESTED_OPTIONS = frozenset({"output_config", "thinking"})
"""Anthropic's documented nested objects (``output_config``, ``thinking``):
``model_options`` inside them is merged key by key (``base.merge_options``)."""


def _fit_thinking_budget(body: dict[str, Any], *, explicit: bool) -> None:
    """Keep ``thinking.budget_tokens`` below ``max_tokens``, as Anthropic requires
    ("budget_tokens must be less than max_tokens": the extended-thinking guide,
    https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking, and the
    SDK's ``ThinkingConfigEnabledParam.budget_tokens``).

    With zett's default ``max_tokens`` (the request set none) it is raised to the
    budget plus :data:`DEFAULT_MAX_TOKENS` of room for the answer; a ``max_tokens``
    the host set is never changed: a budget that does not fit it is a
    :class:`~zett_agent.errors.ConfigError` before anything is sent.
    """
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    limit = body.get("max_tokens")
    if not isinstance(budget, int) or not isinstance(limit, int) or budget < limit:
        return
    if explicit:
        raise ConfigError(
            f"Anthropic's thinking budget ({budget} tokens) must be less than max_tokens "
            f"({limit}): raise max_tokens above the budget, or lower the budget"
        )
    body["max_tokens"] = budget + DEFAULT_MAX_TOKENS


class AnthropicMessages(WireProtocol):
    """The Anthropic Messages API (name ``"anthropic"``)."""

    name = "anthropic"
    supports_prefill = True  # a trailing assistant message is continued

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        """``POST /v1/messages``: system prompt, alternating messages, tools.

        Consecutive tool results share one user message; an assistant message with
        an Anthropic ``provider_record`` is replayed block for block; a trailing
        assistant message (a prefill) is sent as is.
        """
        system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
        messages: list[dict[str, Any]] = []
        for index, message in enumerate(request.messages):
            if isinstance(message, UserMessage):
                parts = user_parts(message, vendor)
                last = messages[-1] if messages else None
                if last and last["role"] == "user" and isinstance(last["content"], list):
                    last["content"].extend(_blocks(message.content, parts))
                elif parts:
                    messages.append({"role": "user", "content": _blocks(message.content, parts)})
                else:
                    messages.append({"role": "user", "content": message.content})
            elif isinstance(message, ToolResultMessage):
                text, sent = result_parts(message, vendor)
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": _blocks(text, sent) if sent else text,
                }
                if message.is_error:
                    block["is_error"] = True
                last = messages[-1] if messages else None
                if last and last["role"] == "user" and isinstance(last["content"], list):
                    last["content"].append(block)
                else:
                    messages.append({"role": "user", "content": [block]})
            elif isinstance(message, AssistantMessage):
                content = _assistant_content(message, index)
                if content:
                    messages.append({"role": "assistant", "content": content})
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": DEFAULT_MAX_TOKENS if request.max_tokens is None else request.max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.tools:
            body["tools"] = [t.declaration("input_schema") for t in request.tools]
        if request.tool_choice:
            body["tool_choice"] = dict(
                _TOOL_CHOICE.get(request.tool_choice, {"type": "tool", "name": request.tool_choice})
            )
        body.update(request.sampling(max_tokens=None, stop="stop_sequences"))  # max_tokens: above
        body["stream"] = request.stream
        add_settings(body, request, vendor)
        if request.prompt_cache:
            _cache_breakpoints(body)
        merge_options(body, request.extra_body, NESTED_OPTIONS)
        _fit_thinking_budget(body, explicit=request.max_tokens is not None)
        return HTTPRequest(
            path="/v1/messages", body=body, response_format="sse" if request.stream else "json"
        )

    def decoder(self, vendor: Vendor) -> AnthropicDecoder:
        """A fresh :class:`AnthropicDecoder` for one response."""
        return AnthropicDecoder(vendor)

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``record`` without its client ``tool_use`` blocks (text, thinking and
        server-side tool blocks stay); None for a record of another protocol."""
        content = _record_content(record)
        if record is None or content is None:
            return None
        kept = [b for b in content if not (isinstance(b, Mapping) and b.get("type") == "tool_use")]
        return {**record, "content": kept}

    def join_prefill(self, prefix: str, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The continuation's record with the prefilled text in front of its first
        text block (or as a new first block); None for a record of another protocol."""
        content = _record_content(record)
        if content is None:
            return None
        blocks = [dict(b) if isinstance(b, Mapping) else b for b in content]
        first = blocks[0] if blocks else None
        if (
            isinstance(first, dict)
            and first.get("type") == "text"
            and isinstance(first.get("text"), str)
        ):
            first["text"] = prefix + first["text"]
        else:
            blocks.insert(0, {"type": "text", "text": prefix})
        return {**record, "content": blocks}


def _blocks(text: str, parts: tuple[Part, ...] | list[Part]) -> list[dict[str, Any]]:
    """``text`` (when not empty) and ``parts`` as content blocks."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for part in parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(_media_block(part))
    return blocks


def _media_block(part: MediaPart) -> dict[str, Any]:
    """An ``image`` or ``document`` block (anthropic ``ImageBlockParam``,
    ``DocumentBlockParam``); the vendor row has checked the kind and media type."""
    source: dict[str, Any]
    if part.url is not None:
        source = {"type": "url", "url": part.url}
    elif part.media_type == "text/plain":
        text = (part.data or b"").decode("utf-8", "replace")
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.base64()}
    block: dict[str, Any] = {"type": part.kind, "source": source}
    if part.kind == "document" and part.name:
        block["title"] = part.name
    return block


_EPHEMERAL = {"type": "ephemeral"}
_NOT_CACHEABLE = frozenset({"thinking", "redacted_thinking"})


def _cache_breakpoints(body: dict[str, Any]) -> None:
    """Prompt caching on the stable prefix (``ModelRequest.prompt_cache``): a
    ``cache_control: {"type": "ephemeral"}`` breakpoint on the last tool, on the
    system prompt and on the last content block of the last message (the history
    so far, which the next turn reads back from the cache; before a trailing
    assistant prefill, the message before it): 3 of the 4 the API
    allows (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching;
    anthropic ``CacheControlEphemeralParam``). A prefix shorter than the model's
    minimum is not cached, without an error. Replayed blocks are copied, never
    changed."""
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(_EPHEMERAL)}
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(_EPHEMERAL)}]
    messages = body["messages"]
    at = len(messages) - 1
    if messages and messages[-1]["role"] == "assistant":
        at -= 1  # a prefill (a resumed answer) is not the stable part: the turn before it is
    if at < 0:
        return
    last = messages[at]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    for n in range(len(blocks) - 1, -1, -1):
        block = blocks[n]
        if isinstance(block, Mapping) and block.get("type") not in _NOT_CACHEABLE:
            if block.get("type") == "text" and not block.get("text"):
                continue
            blocks[n] = {**block, "cache_control": dict(_EPHEMERAL)}
            messages[at] = {**last, "content": blocks}
            return


_SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
_SUSPECT = frozenset({"thinking", "redacted_thinking", *_SERVER_CALLS})
"""Block types a rule looks at: a record with none of them keeps every rule."""


def record_rules(record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
    """Anthropic's rules for an assistant message's content blocks, sent back
    (:mod:`zett_agent.protocols._sendable`), each with the block left out when
    it breaks it:

    * a ``thinking`` block carries its ``signature`` (a stream cut inside the block
      leaves ``""``: "Invalid signature in thinking block"; extended thinking,
      https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
      "preserving thinking blocks"), a ``redacted_thinking`` block its ``data``;
    * a ``server_tool_use`` (or ``mcp_tool_use``) block is answered by its result
      block (``*_tool_result`` with its id) in the same message (server tools,
      https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool:
      the result follows the use in the assistant turn; a cut between them is
      rejected).

    Signed, signature-only and redacted blocks that keep these are sent exactly."""
    content = _record_content(record)
    if content is None:
        return record, []
    kinds = [b.get("type") if isinstance(b, dict) else None for b in content]
    if not _SUSPECT.intersection(kinds):  # the usual record: nothing to look at
        return record, []
    answered = {
        b.get("tool_use_id")
        for b, kind in zip(content, kinds, strict=True)
        if isinstance(kind, str) and kind.endswith("_tool_result")
    }
    kept: list[Any] = []
    repairs: list[str] = []
    for n, (block, kind) in enumerate(zip(content, kinds, strict=True)):
        if kind == "thinking" and not (
            isinstance(block.get("signature"), str) and block["signature"]
        ):
            repairs.append(f"thinking block {n}: no signature (unfinished; left out)")
        elif kind == "redacted_thinking" and not (
            isinstance(block.get("data"), str) and block["data"]
        ):
            repairs.append(f"redacted_thinking block {n}: no data (left out)")
        elif kind in _SERVER_CALLS and block.get("id") not in answered:
            repairs.append(f"{kind} block {n} ({block.get('name')}): no result block (left out)")
        else:
            kept.append(block)
    if not repairs:
        return record, []
    return ({**record, "content": kept} if kept else None), repairs


def _record_content(record: Mapping[str, Any] | None) -> list[Any] | None:
    if not isinstance(record, Mapping) or record.get("protocol") != "anthropic":
        return None
    content = record.get("content")
    return list(content) if isinstance(content, list) else None


def _assistant_content(message: AssistantMessage, index: int) -> list[dict[str, Any]]:
    replay = _record_content(sendable_record(message, index, "anthropic", record_rules))
    if replay:
        return replay
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments_object()}
        )
    return blocks


class AnthropicDecoder(Decoder):
    """Decoder for one Messages response (SSE stream or whole JSON body).

    ``feed_sse`` raises :class:`StreamError` for an ``error`` event before any
    output; ``decode_body`` raises :class:`ProviderError` for a 200 body of type
    ``"error"``; ``decode_error`` raises :class:`ProviderHTTPError`. Nothing else
    escapes: malformed events are counted in ``detail["malformed_events"]``.
    """

    error_shape = ErrorShape(code=())  # no code field; see error_fields

    def record_rules(self, record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
        return record_rules(record)

    def __init__(self, vendor: Vendor) -> None:
        super().__init__(vendor)
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._strings: dict[tuple[int, str], Pieces] = {}  # streamed block fields
        self._text_run: tuple[int, Pieces] | None = None  # the last text delta's block
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._stop_sequence: str | None = None
        self._stop_details: Any = None
        self._message_stop = False
        self._error: dict[str, Any] | None = None

    # ------------------------------------------------------------ streaming
    def feed_sse(self, event: str, data: str) -> list[StreamEvent]:
        if self._error is not None:
            return []
        try:
            payload: Any = parse_json(data)
        except (ValueError, RecursionError):
            payload = None
        if type(payload) is not dict:
            if event == "error":
                return self._on_error({}, data)
            self.malformed += 1
            return []
        kind = payload.get("type")
        if kind == "content_block_delta" and event != "error":
            return self._on_delta(payload)  # the hot path
        if kind == "error" or event == "error":
            return self._on_error(payload, data)
        return self._handle(kind or event, payload)

    def _handle(self, kind: Any, data: dict[str, Any]) -> list[StreamEvent]:
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                return self._bad()
            self.builder.model = as_text(message.get("model")) or self.builder.model
            self._add_usage(message.get("usage"))
        elif kind == "content_block_start":
            index, block = data.get("index"), data.get("content_block")
            if not isinstance(index, int) or not isinstance(block, dict):
                return self._bad()
            self._blocks[index] = dict(block)
            for field in ("text", "thinking", "signature"):
                self._strings.pop((index, field), None)
            self._text_run = None
            if block.get("type") == "redacted_thinking":
                self.opaque_progress += 1  # progress for the idle clock, with no event
            if block.get("type") == "tool_use":
                events = self.builder.tool_call(
                    index, id=as_text(block.get("id")), name=as_text(block.get("name"))
                )
                self.builder.close_call(index, False)  # open until its content_block_stop
                return events
        elif kind == "content_block_delta":
            return self._on_delta(data)
        elif kind == "content_block_stop":
            return self._on_block_stop(data.get("index"))
        elif kind == "message_delta":
            delta = data.get("delta")
            if not isinstance(delta, dict):
                return self._bad()
            reason = raw_value(delta.get("stop_reason"))  # 42 is kept as "42"
            if reason is not None:
                self._stop_reason = reason
                sequence = delta.get("stop_sequence")
                self._stop_sequence = sequence if isinstance(sequence, str) else None
                self._stop_details = delta.get("stop_details")
            self._add_usage(data.get("usage"))
        elif kind == "message_stop":
            self._message_stop = True
        return []

    def _on_delta(self, data: dict[str, Any]) -> list[StreamEvent]:
        index, delta = data.get("index"), data.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return self._bad()
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            text = delta["text"]
            run = self._text_run
            if run is not None and run[0] == index:
                run[1].append(text)
            else:
                block = self._block(index, "text")
                self._text_run = (index, self._append(index, block, "text", text))
            return self.builder.text(text)
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block = self._block(index, "thinking")
            self._append(index, block, "thinking", delta["thinking"])
            return self.builder.reasoning(delta["thinking"])
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block = self._block(index, "thinking")
            self._append(index, block, "signature", delta["signature"])
            self.opaque_progress += 1  # progress for the idle clock, with no event
            return []
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block = self._block(index, "tool_use")
            self._json.setdefault(index, []).append(delta["partial_json"])
            if block.get("type") == "tool_use":
                events = self.builder.tool_call(index, arguments=delta["partial_json"])
                if self.builder.call_closed(index) is None:  # a delta without its start
                    self.builder.close_call(index, False)
                return events
            return []
        if kind == "compaction_delta":  # beta: a compaction block's summary, sent whole
            block = self._block(index, "compaction")
            for field in ("content", "encrypted_content"):
                if isinstance(delta.get(field), str):
                    block[field] = delta[field]
            self.opaque_progress += 1  # progress for the idle clock, with no event
            return []
        if kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            citations = self._block(index, "text").setdefault("citations", [])
            if isinstance(citations, list):
                citations.append(delta["citation"])
            return []
        if kind in ("text_delta", "thinking_delta", "signature_delta", "input_json_delta"):
            return self._bad()
        return []  # a delta type added after this was written: skipped

    def _on_block_stop(self, index: Any) -> list[StreamEvent]:
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None or block.get("type") != "tool_use":
            return []
        self.builder.close_call(index, True)  # the wire finished this call
        if index in self._json:
            return []
        given = block.get("input")  # a whole input on the start event, no deltas
        if isinstance(given, dict) and given:
            try:
                arguments = json.dumps(given, ensure_ascii=False)
            except RecursionError:  # parsed, but too deep to write again: never run
                arguments = TOO_DEEP
            return self.builder.tool_call(index, arguments=arguments)
        return []

    def _on_error(self, payload: dict[str, Any], data: str) -> list[StreamEvent]:
        error = payload.get("error")
        error = error if isinstance(error, dict) else {}
        error_type = as_text(error.get("type"))
        message = as_text(error.get("message")) or data[:200] or "error event in the stream"
        if not self.builder.has_output:
            raise self.provider_error(
                message, streamed=True, error_type=error_type, body=payload or data
            )
        self._error = {"type": error_type, "message": message}
        return []

    def _append(self, index: int, block: dict[str, Any], key: str, piece: str) -> Pieces:
        """Add ``piece`` to the block's ``key`` text (joined in :meth:`_record`;
        adding to the string itself would copy it once per delta); returns the pieces."""
        pieces = self._strings.get((index, key))
        if pieces is None:
            pieces = self._strings[index, key] = Pieces()
            pieces.append(_str(block.get(key)))
        pieces.append(piece)
        return pieces

    def _block(self, index: int, kind: str) -> dict[str, Any]:
        block = self._blocks.get(index)
        if block is None:  # a delta without its start: keep what it carries
            block = self._blocks[index] = {"type": kind}
            if kind == "tool_use":
                block["input"] = {}
        return block

    def _bad(self) -> list[StreamEvent]:
        self.malformed += 1
        return []

    def _add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self._usage.update({k: v for k, v in usage.items() if v is not None})
        u = self._usage
        tokens = [as_int(u.get(k)) for k in ("input_tokens", "cache_read_input_tokens")]
        creation = as_int(u.get("cache_creation_input_tokens"))
        details = u.get("output_tokens_details")
        thinking = as_int(details.get("thinking_tokens")) if isinstance(details, dict) else None
        parts = [t for t in (*tokens, creation) if t is not None]
        self.builder.set_usage(
            TokenUsage(
                input_tokens=sum(parts) if parts else None,
                output_tokens=as_int(u.get("output_tokens")),
                cached_input_tokens=tokens[1],
                reasoning_tokens=thinking,
                cache_write_tokens=creation,
            )
        )

    # ------------------------------------------------------------ the end
    def finish(self) -> ModelResponse:
        """The response so far. Without a ``stop_reason`` or ``message_stop`` it is
        INTERRUPTED with ``detail["incomplete_stream"]``; after an error event it is
        INTERRUPTED with the error type as ``raw``."""
        if self._error is not None:
            info = stop(
                StopReason.INTERRUPTED,
                self._error["type"],
                message=self._error["message"],
                detail={"error": dict(self._error)},
            )
        elif self._stop_reason is not None:
            info = self._map_stop(self._stop_reason)
        elif self._message_stop:
            info = stop(StopReason.OTHER, detail={"missing_stop_reason": True})
        else:
            info = stop(StopReason.INTERRUPTED, detail={"incomplete_stream": True})
        return self.build(info, self._record())

    def _map_stop(self, raw: str) -> StopInfo:
        details = self._stop_details if isinstance(self._stop_details, dict) else {}
        extra = {k: v for k, v in details.items() if k not in _STOP_DETAIL_FIELDS}
        # fields zett does not read are kept under one key of their own, so the
        # provider can never set a key the runtime writes (withheld_tool_calls, marker...)
        detail: dict[str, Any] = {"stop_details": extra} if extra else {}
        if self._stop_sequence is not None:
            detail["stop_sequence"] = self._stop_sequence
        return stop(
            self.reason_for(raw, STOP_REASONS),
            raw,
            category=as_text(details.get("category")),
            message=as_text(details.get("explanation")),
            recommended_model=as_text(details.get("recommended_model")),
            detail=detail,
        )

    def _record(self) -> dict[str, Any]:
        content = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            for key in ("text", "thinking", "signature"):
                pieces = self._strings.get((index, key))
                if pieces is not None:
                    block[key] = pieces.join()
            if index in self._json:
                # a client call's text as the builder read it (a repeat read once)
                read = (
                    self.builder.read_arguments(index) if block.get("type") == "tool_use" else None
                )
                text = read[0] if read is not None else "".join(self._json[index])
                try:
                    value = json.loads(text or "{}")
                except (ValueError, RecursionError):
                    value = None  # cut off (max_tokens): the start's input stays
                if isinstance(value, dict):
                    block["input"] = value
            content.append(block)
        return {"protocol": "anthropic", "content": _replayable(content)}

    # ------------------------------------------------------------ whole bodies
    def decode_body(self, body: bytes) -> ModelResponse:
        """A non-streaming message, decoded as the stream of the same content.

        Raises :class:`~zett_agent.errors.DecodeError` when the body is not JSON
        and :class:`ProviderError` for a body of type ``"error"``.
        """
        data = load_json(body)
        if not isinstance(data, dict):
            data = {"content": data}
        if data.get("type") == "error":
            failure = as_dict(data.get("error"))
            raise self.provider_error(
                as_text(failure.get("message")) or "error body",
                streamed=False,
                error_type=as_text(failure.get("type")),
                body=data,
            )
        self._handle("message_start", {"message": {"model": data.get("model")}})
        content = data.get("content")
        blocks = content if isinstance(content, list) else []
        if not isinstance(content, list) and content is not None:
            self.malformed += 1
        for index, block in enumerate(blocks):
            for kind, event in _block_events(index, block):
                self._handle(kind, event)
        if blocks and isinstance(blocks[-1], dict) and blocks[-1].get("type") == "tool_use":
            # a body has no content_block_stop: its last block, a tool call, is the one
            # an output limit would have cut (judged by the stop in build)
            self.builder.close_call(len(blocks) - 1, None)
        delta = {k: data.get(k) for k in ("stop_reason", "stop_sequence", "stop_details")}
        self._handle("message_delta", {"delta": delta, "usage": data.get("usage")})
        self._handle("message_stop", {})
        response = self.finish()
        if isinstance(content, list) and all(isinstance(b, dict) for b in content):
            return _with_record(
                response, {"protocol": "anthropic", "content": _replayable(content)}
            )
        return response

    def error_fields(self, data: Any) -> ErrorFields:
        """``code="prompt_too_long"`` for a 400 "prompt is too long" (the input-side
        context overflow): Anthropic's errors carry a type, not a code."""
        fields = super().error_fields(data)
        too_long = (fields.message or "").lower().startswith("prompt is too long")
        return fields._replace(code="prompt_too_long") if too_long else fields


def _block_events(index: int, block: Any) -> list[tuple[str, dict[str, Any]]]:
    """The stream events that carry the content block ``block``."""
    if not isinstance(block, dict):
        return [("content_block_start", {"index": index, "content_block": block})]
    kind = block.get("type")
    start, deltas = dict(block), []
    if kind == "text" and isinstance(block.get("text"), str):
        start["text"] = ""
        deltas.append({"type": "text_delta", "text": block["text"]})
    elif kind == "thinking":
        start.update(thinking="", signature="")
        if isinstance(block.get("thinking"), str):
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if isinstance(block.get("signature"), str):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("input"), dict):
        start["input"] = {}
        deltas.append(
            {
                "type": "input_json_delta",
                "partial_json": json.dumps(block["input"], ensure_ascii=False),
            }
        )
    events = [("content_block_start", {"index": index, "content_block": start})]
    events += [("content_block_delta", {"index": index, "delta": d}) for d in deltas]
    return [*events, ("content_block_stop", {"index": index})]


def _replayable(blocks: list[Any]) -> list[Any]:
    """``blocks`` without empty text blocks, which the API rejects when replayed."""
    return [
        b
        for b in blocks
        if not (b.get("type") == "text" and b.get("text") == "" and not b.get("citations"))
    ]


def _with_record(response: ModelResponse, record: Mapping[str, Any]) -> ModelResponse:
    return replace(response, provider_record=record)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
