"""OpenAI Chat Completions (``POST /chat/completions``) and every server that speaks it.

One decoder serves OpenAI, DeepSeek, GLM (Z.ai), Kimi (Moonshot), OpenRouter,
Mistral, Qwen (DashScope), Groq, xAI and llama.cpp. What differs between them is a
row in :mod:`zett_agent.vendors` (extra ``finish_reasons``, ``http_refusals``),
never a branch here. Where each mapping comes from:

* ``stop``/``length``/``tool_calls``/``content_filter``/``function_call`` and the
  ``refusal`` field (which comes with ``finish_reason: "stop"``): OpenAI API
  reference, chat object, https://platform.openai.com/docs/api-reference/chat/object
  and ``openai-python`` ``types/chat/chat_completion.py``.
* vendor values (DeepSeek ``insufficient_system_resource``, GLM ``sensitive``,
  Mistral ``model_length``, OpenRouter ``error``...): the doc in each vendor row's
  ``docs`` and ``../shared/corpus/WIRE.md`` sections 5-12.
* ``end_turn``/``stop_sequence``/``tool_use``/``max_tokens``: Anthropic's stop
  reasons, passed through unchanged by gateways in front of Claude
  (https://docs.anthropic.com/en/api/handling-stop-reasons).
* errors inside a 200 stream: OpenRouter "Mid-stream errors"
  (https://openrouter.ai/docs/api-reference/errors), Groq's named ``event: error``
  and openai-python ``_streaming.py`` (any chunk with a top-level ``error``).

Rules beyond the tables: a step whose message holds tool calls but says ``stop``
asked for tools (TOOL_USE, raw kept); a refusal text makes it a REFUSAL; an error
chunk makes it INTERRUPTED when output arrived (else :class:`StreamError`); a
stream with neither a finish_reason nor ``[DONE]`` is INTERRUPTED with
``detail["incomplete_stream"]``; an answer with no choice at all (a body with
``choices: []``, a stream of such chunks to its ``[DONE]``) is INTERRUPTED with
``detail["no_choices"]`` on both paths, like Gemini's no candidates. The Chat wire
never says whether a call was finished: under ``length`` (or a vendor's context value)
the builder takes the last call as cut (``ToolCall.closed`` False, never run), whatever
its arguments look like. A
``reasoning_content`` the provider sent, even ``""``, goes back in the replayed turn.

Content parts (openai ``ChatCompletionContentPartParam``): a user message with parts
sends ``content`` as a list: ``text``, ``image_url`` (the URL, or a ``data:`` URL of
the bytes), ``input_audio`` (base64 ``data``, ``format`` ``wav``/``mp3``) and
``file`` (``file_data`` a ``data:`` URL, ``filename``). Which of them a vendor row
takes is its ``media``. A tool message takes text only
(``ChatCompletionToolMessageParam``): a tool result's parts are described in its text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import (
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent._parts import MediaPart, Part, TextPart
from zett_agent.errors import DecodeError
from zett_agent.protocols._base import Decoder, ErrorFields, WireProtocol
from zett_agent.protocols._body import (
    add_settings,
    as_code,
    as_int,
    as_text,
    merge_options,
    parse_json,
    raw_value,
    stop,
    user_parts,
)
from zett_agent.protocols._sendable import sendable_record
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import Vendor, dig

__all__ = ["OpenAIChat", "OpenAIChatDecoder"]

PROTOCOL = "openai-chat"

_R = StopReason
FINISH_REASONS: Mapping[str, StopReason] = {
    # OpenAI Chat
    "stop": _R.END_TURN,
    "tool_calls": _R.TOOL_USE,
    "function_call": _R.TOOL_USE,
    "length": _R.MAX_OUTPUT,
    "content_filter": _R.REFUSAL,
    # OpenAI-compatible endpoints in front of guard models (LiteLLM proxy guardrails,
    # Bedrock's GUARDRAIL_INTERVENED passed through): a safety system declined
    "guardrail_intervened": _R.REFUSAL,
    # Anthropic words passed through by gateways
    "end_turn": _R.END_TURN,
    "stop_sequence": _R.END_TURN,
    "tool_use": _R.TOOL_USE,
    "max_tokens": _R.MAX_OUTPUT,
}
"""The protocol's own table; a vendor row's ``finish_reasons`` is read first."""

_KEEP_OVER_ERROR = frozenset({_R.MAX_OUTPUT, _R.CONTEXT_FULL, _R.REFUSAL})
"""Reasons an error chunk arriving after them does not replace (OpenRouter sends
``length`` and then ``{"error": "Token limit reached"}``)."""


# ---------------------------------------------------------------- request


NESTED_OPTIONS = frozenset({"stream_options", "reasoning", "thinking", "web_search_options"})
"""Chat's nested objects (``stream_options``, OpenRouter ``reasoning``, DeepSeek/GLM
``thinking``, ``web_search_options``):
``model_options`` inside them is merged key by key (``base.merge_options``)."""


class OpenAIChat(WireProtocol):
    """The OpenAI Chat Completions wire protocol."""

    name = PROTOCOL

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [_encode_message(m, n, vendor) for n, m in enumerate(request.messages)],
            "stream": request.stream,
        }
        if request.stream:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": t.declaration()} for t in request.tools
            ]
        if request.tool_choice:
            body["tool_choice"] = (
                request.tool_choice
                if request.tool_choice in ("auto", "none", "required")
                else {"type": "function", "function": {"name": request.tool_choice}}
            )
        body.update(request.sampling(max_tokens="max_tokens", stop="stop"))
        add_settings(body, request, vendor)
        merge_options(body, request.extra_body, NESTED_OPTIONS)
        return HTTPRequest("/chat/completions", body, "sse" if request.stream else "json")

    def decoder(self, vendor: Vendor) -> OpenAIChatDecoder:
        return OpenAIChatDecoder(vendor)

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        message = _recorded_message(record)
        if message is None:
            return None
        kept = {k: v for k, v in message.items() if k not in ("tool_calls", "function_call")}
        if not as_text(kept.get("content")):
            return None  # nothing left to replay; the plain message form is used
        return {"protocol": PROTOCOL, "message": kept}


def _recorded_message(record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not isinstance(record, Mapping) or record.get("protocol") != PROTOCOL:
        return None
    message = record.get("message")
    return message if isinstance(message, Mapping) else None


def record_rules(record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
    """Chat Completions' rule for an assistant message sent back
    (:mod:`zett_agent.protocols._sendable`): it has ``content`` or ``tool_calls``
    (``ChatCompletionAssistantMessageParam.content``: "Required unless
    ``tool_calls`` or ``function_call`` is specified",
    https://platform.openai.com/docs/api-reference/chat/create). A recorded message
    with neither is left out (the encoder sends the message's text instead). Tool
    calls without results are answered by the history repair (``_history.py``)."""
    message = _recorded_message(record)
    if message is None:
        return record, []
    if message.get("content") is None and not (
        message.get("tool_calls") or message.get("function_call")
    ):
        return None, ["assistant message: neither content nor tool_calls (left out)"]
    return record, []


def _encode_message(message: Message, index: int, vendor: Vendor) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        parts = user_parts(message, vendor)
        if not parts:
            return {"role": "user", "content": message.content}
        return {"role": "user", "content": _content_parts(message.content, parts)}
    if isinstance(message, ToolResultMessage):
        text = message.content
        for part in message.parts:  # a tool message is text: media parts are described
            line = part.describe()
            if isinstance(part, TextPart) or line not in message.content:
                text = f"{text}\n{line}" if text else line
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
    recorded = _recorded_message(sendable_record(message, index, PROTOCOL, record_rules))
    if recorded is not None:
        return dict(recorded)
    return _assistant_dict(message.text, _tool_call_dicts(message.tool_calls))


_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}


def _content_parts(text: str, parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    """A user message's ``content`` list (openai ``ChatCompletionContentPartParam``)."""
    out: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif part.kind == "image":
            out.append({"type": "image_url", "image_url": {"url": part.url or part.data_url()}})
        elif part.kind == "audio":
            audio = {"data": part.base64(), "format": _AUDIO_FORMATS[part.media_type]}
            out.append({"type": "input_audio", "input_audio": audio})
        else:
            file = {"file_data": part.data_url(), "filename": part.name or _file_name(part)}
            out.append({"type": "file", "file": file})
    return out


def _file_name(part: MediaPart) -> str:
    """A file name for a document sent without one (OpenAI asks for ``filename``)."""
    return "document.pdf" if part.media_type == "application/pdf" else "document"


def _assistant_dict(
    text: str, tool_calls: list[dict[str, Any]], reasoning: Mapping[str, str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": text or (None if tool_calls else "")}
    if tool_calls:
        out["tool_calls"] = tool_calls
    out.update(reasoning or {})
    return out


def _tool_call_dicts(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]


# ---------------------------------------------------------------- decoder

_SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)
"""What a chunk of an unexpected shape could still raise; it is counted, not raised."""


class OpenAIChatDecoder(Decoder):
    """Reads ``chat.completion.chunk`` SSE events or one ``chat.completion`` body."""

    def record_rules(self, record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
        return record_rules(record)

    def __init__(self, vendor: Vendor) -> None:
        super().__init__(vendor)
        self._finish: str | None = None
        self._done = False
        self._refusal: list[str] = []
        self._native: str | None = None
        self._has_native = False
        self._error: Any = None
        self._filter_results: dict[str, Any] | None = None
        self._replay_reasoning = False
        self._saw_tool_calls = False
        self._saw_choice = False
        self._slots: dict[int, int] = {}  # wire index -> call key (the index's current call)
        self._ids: dict[str, int] = {}  # call id -> call key
        self._last_key: int | None = None
        self._next_key = 0

    # -- feeding
    def feed_sse(self, event: str, data: str) -> list[StreamEvent]:
        try:
            chunk = parse_json(data)
        except (ValueError, RecursionError):
            text = data.strip()
            if not text:
                return []
            if text == "[DONE]":
                self._done = True
                return []
            chunk = None
        if event == "error" and not (type(chunk) is dict and "error" in chunk):
            chunk = {"error": chunk if chunk is not None else {"message": data.strip()[:500]}}
        if type(chunk) is not dict:
            self.malformed += 1
            return []
        try:
            return self._read_chunk(chunk, whole=False)
        except _SHAPE_ERRORS:
            self.malformed += 1
            return []

    def finish(self) -> ModelResponse:
        complete = self._done or self._finish is not None or self._error is not None
        return self._build(self._conclude(complete=complete))

    def decode_body(self, body: bytes) -> ModelResponse:
        if not body.strip():
            raise DecodeError(
                f"{self.vendor.name} answered 200 with an empty body instead of a chat "
                "completion (llama.cpp does this for some requests with tools)"
            )
        data = _parse(body)
        if type(data) is not dict:
            excerpt = body[:200].decode("utf-8", "replace")
            raise DecodeError(f"{self.vendor.name}: body is not a chat completion: {excerpt!r}")
        if not isinstance(data.get("choices"), list) and _is_empty(data.get("error")):
            raise DecodeError(f"{self.vendor.name}: chat completion without choices")
        try:
            self._read_chunk(data, whole=True)
        except _SHAPE_ERRORS:
            self.malformed += 1
        return self._build(self._conclude(complete=True))

    def error_fields(self, data: Any) -> ErrorFields:
        """``{"error": {...}}``, ``{"error": "..."}`` (xAI), ``{"detail": "..."}`` (old
        DeepSeek), or plain text."""
        if not isinstance(data, dict):
            return super().error_fields(data)
        error = data.get("error")
        if isinstance(error, dict):
            message, error_type, code, _ = _error_fields(error)
        else:
            message, error_type, code, _ = _error_fields(data)
            message = message or as_text(data.get("detail"))
        return ErrorFields(message, error_type, code)

    # -- reading one chunk / body
    # The hot path: one call per chunk. JSON from json.loads holds only dict and list
    # containers, so ``type(x) is dict`` stands for the (slower) ABC check.
    def _read_chunk(self, chunk: dict[str, Any], *, whole: bool) -> list[StreamEvent]:
        model = chunk.get("model")
        if model and type(model) is str:
            self.builder.model = model
        choices = chunk.get("choices")
        choice = None
        if type(choices) is list and choices:
            self._saw_choice = True
            choice = choices[0]
            if type(choice) is not dict or choice.get("index", 0) not in (0, None):
                choice = _first_choice(choices)
        events = self._read_choice(choice, whole=whole) if choice is not None else []
        if (
            chunk.get("usage") is not None
            or (choice is not None and choice.get("usage") is not None)
            or "x_groq" in chunk
        ):
            usage = (
                _usage(chunk.get("usage"))
                or _usage(choice.get("usage") if choice else None)
                or _usage(dig(chunk, "x_groq.usage"))
            )
            if usage is not None:
                self.builder.set_usage(usage)
        error = chunk.get("error")
        if (error is None or _is_empty(error)) and choice is not None:
            error = choice.get("error")
        if error is not None and not _is_empty(error):
            self._on_error(error, whole=whole)
        return events

    def _read_choice(self, choice: dict[str, Any], *, whole: bool) -> list[StreamEvent]:
        delta = choice.get("message" if whole else "delta")
        if type(delta) is dict:
            content = delta.get("content")
            if type(content) is str:
                events = self.builder.text(content)  # a new list: extended below
            else:
                events = self._read_content(content)
            if content is None or len(delta) > 1:  # more than a content piece
                events += self._read_delta(delta, whole=whole)
        else:
            events = []
        finish = choice.get("finish_reason")
        if finish is not None:
            self._finish = raw_value(finish) or self._finish  # 42 is kept as "42"
        if "native_finish_reason" in choice:
            self._has_native = True
            self._native = raw_value(choice.get("native_finish_reason")) or self._native
        results = choice.get("content_filter_results")
        if results and type(results) is dict:
            self._filter_results = dict(results)
        return events

    def _read_delta(self, delta: dict[str, Any], *, whole: bool) -> list[StreamEvent]:
        """What a delta (or message) holds beside its ``content``."""
        events: list[StreamEvent] = []
        # reasoning_content: DeepSeek, GLM, Kimi, xAI, Qwen; reasoning: OpenRouter, Groq
        for field in ("reasoning_content", "reasoning"):
            piece = delta.get(field)
            if type(piece) is not str:
                continue
            # DeepSeek wants reasoning_content back on a tool-call turn, even "" (an
            # empty value sent is still the field the provider requires)
            self._replay_reasoning |= field == "reasoning_content"
            if piece:
                events += self.builder.reasoning(piece)
                break
        refusal = as_text(delta.get("refusal"))
        if refusal:
            self._refusal.append(refusal)
            events += self.builder.text(refusal)
        calls = delta.get("tool_calls")
        if type(calls) is list and calls:
            self._saw_tool_calls = True
            for position, call in enumerate(calls):
                if type(call) is dict:
                    events += self._read_tool_call(call, position if whole else None)
        legacy = delta.get("function_call")
        if type(legacy) is dict and not self._saw_tool_calls:
            # legacy form; llama.cpp sends it beside the same call in tool_calls
            events += self._fragment(-1, None, legacy)
        return events

    def _read_content(self, content: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if type(content) is not list:
            return events
        for part in content:  # Mistral: [{type: text|thinking, ...}]
            if type(part) is not dict:
                continue
            if part.get("type") == "text":
                events += self.builder.text(as_text(part.get("text")) or "")
            elif part.get("type") == "thinking":
                thinking = part.get("thinking")
                pieces = thinking if isinstance(thinking, list) else [{"text": thinking}]
                for piece in pieces:
                    if type(piece) is dict:
                        events += self.builder.reasoning(as_text(piece.get("text")) or "")
        return events

    def _read_tool_call(
        self, call: Mapping[str, Any], default_index: int | None
    ) -> list[StreamEvent]:
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = default_index
        call_id = as_text(call.get("id"))
        function = call.get("function")
        key = self._call_key(index, call_id)
        return self._fragment(key, call_id, function if type(function) is dict else {})

    def _call_key(self, index: int | None, call_id: str | None) -> int:
        """Which call a fragment belongs to: by id when known, else by index (a new
        non-empty id at a used index starts a new call), else the last call when the
        fragment has neither (a whole call with an id but no index is a new call)."""
        current = self._slots.get(index) if index is not None else None
        if call_id is not None and call_id in self._ids:
            key = self._ids[call_id]
        elif current is not None and (
            call_id is None or self.builder.tool_call_id(current) in (None, call_id)
        ):
            key = current
        elif index is None and call_id is None and self._last_key is not None:
            key = self._last_key
        else:
            key = self._next_key
            self._next_key += 1
        if index is not None:
            self._slots[index] = key
        if call_id is not None:
            self._ids[call_id] = key
        self._last_key = key
        return key

    def _fragment(
        self, key: int, call_id: str | None, function: Mapping[str, Any]
    ) -> list[StreamEvent]:
        name = function.get("name")
        name = name.strip().rstrip(":") if isinstance(name, str) else None  # llama.cpp "f:"
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not (call_id or name or arguments) and not self.builder.has_tool_call(key):
            return []
        return self.builder.tool_call(key, id=call_id, name=name or None, arguments=arguments)

    def _on_error(self, error: Any, *, whole: bool) -> None:
        self._error = error
        finish = self.reason_for(self._finish, FINISH_REASONS) if self._finish else None
        if self.builder.has_output or finish in _KEEP_OVER_ERROR:
            return
        message, error_type, code, status = _error_fields(error)
        raise self.provider_error(
            message or "the provider reported an error",
            streamed=not whole,
            status=status or 200,
            error_type=error_type,
            code=code,
            body=error,
        )

    # -- concluding
    def _conclude(self, *, complete: bool) -> StopInfo:
        detail: dict[str, Any] = {}
        if self._has_native:
            detail["native_finish_reason"] = self._native
        if self._error is not None:
            detail["error"] = self._error
        if not complete:
            detail["incomplete_stream"] = True
        raw = self._finish
        reason = self.reason_for(raw, FINISH_REASONS) if raw else None
        if self._refusal:
            return stop(
                _R.REFUSAL, raw, category="refusal", message="".join(self._refusal), detail=detail
            )
        if self._error is not None:
            if reason in _KEEP_OVER_ERROR:
                return stop(reason, raw, detail=detail)
            message, error_type, code, _ = _error_fields(self._error)
            kind = _error_raw(self._error, error_type, code)
            # raw is the provider's own finish_reason when it sent one ("error");
            # the error's code or type is the category
            return stop(_R.INTERRUPTED, raw or kind, category=kind, message=message, detail=detail)
        if raw is None and complete and not self._saw_choice and not self.malformed:
            # the provider answered (a body, or a stream to its [DONE]) with no choice
            # at all: the same stop on both paths, naming what is missing (not when a
            # chunk could not be read: it may have held the choice)
            return stop(
                _R.INTERRUPTED,
                message="the provider returned no choices",
                detail={**detail, "no_choices": True},
            )
        if raw is None or reason is None:
            if complete:
                return stop(_R.OTHER, None, detail={**detail, "missing_finish_reason": True})
            return stop(
                _R.INTERRUPTED,
                message="the stream ended without a finish_reason or [DONE]",
                detail=detail,
            )
        if reason is _R.REFUSAL and self._filter_results:
            detail["content_filter_results"] = self._filter_results
        return stop(reason, raw, detail=detail)  # tool calls with "stop": TOOL_USE (build)

    def _build(self, info: StopInfo) -> ModelResponse:
        """The response; its record keeps ``reasoning_content`` (DeepSeek and Kimi want it
        back in a tool loop) but not ``reasoning``, which Groq rejects in requests."""
        reasoning = self.builder.current_reasoning
        extra = {"reasoning_content": reasoning} if self._replay_reasoning else {}
        message = _assistant_dict(
            self.builder.current_text, _tool_call_dicts(self.builder.tool_calls()), extra
        )
        return self.build(info, {"protocol": PROTOCOL, "message": message})


# ---------------------------------------------------------------- helpers


def _parse(text: str | bytes) -> Any:
    """JSON value of ``text``, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _is_empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


def _first_choice(choices: Any) -> Mapping[str, Any] | None:
    """Choice 0 of a chunk (other choices, from ``n > 1``, are not read)."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if type(choice) is dict and choice.get("index", 0) in (0, None):
            return choice
    return None


def _usage(value: Any) -> Usage | None:
    if type(value) is not dict:
        return None
    cached = as_int(dig(value, "prompt_tokens_details.cached_tokens"))
    usage = Usage(
        input_tokens=as_int(value.get("prompt_tokens")),
        output_tokens=as_int(value.get("completion_tokens")),
        cached_input_tokens=cached
        if cached is not None
        else as_int(value.get("prompt_cache_hit_tokens")),
        reasoning_tokens=as_int(dig(value, "completion_tokens_details.reasoning_tokens")),
        # OpenRouter's usage accounting reports cache writes here
        cache_write_tokens=as_int(dig(value, "prompt_tokens_details.cache_write_tokens")),
    )
    return None if usage == Usage() else usage


def _error_fields(error: Any) -> tuple[str | None, str | None, str | int | None, int | None]:
    """``(message, type, code, HTTP status)`` of an error object (dict or string)."""
    if type(error) is not dict:
        return (
            as_text(error) or (json.dumps(error)[:300] if error is not None else None),
            None,
            None,
            None,
        )
    message = as_text(error.get("message")) or as_text(error.get("error"))
    error_type = as_text(error.get("type")) or as_text(dig(error, "metadata.error_type"))
    code = as_code(error.get("code"))
    status = None
    for value in (error.get("status_code"), error.get("status"), code):
        number = as_int(value)
        if number is not None and 100 <= number <= 599:
            status = number
            break
    return message, error_type, code, status


def _error_raw(error: Any, error_type: str | None, code: str | int | None) -> str:
    if isinstance(code, str) and code:
        return code
    if error_type:
        return error_type
    return str(code) if code is not None else "error"
