"""Ollama's native chat API (``POST /api/chat``), NDJSON stream or one JSON body.

Mappings, from https://github.com/ollama/ollama/blob/main/docs/api.md (chat, load and
unload examples; ``done_reason`` is an open string set in ``server/routes.go`` and
``llm/server.go``) and ``../shared/corpus/WIRE.md`` section 13:

* ``stop`` -> END_TURN, or TOOL_USE when the message had ``tool_calls`` (Ollama keeps
  ``stop`` for tool calls; they can arrive in a chunk before the ``done`` one);
* ``length`` -> MAX_OUTPUT;
* anything else (``load``, ``unload``, ...) -> OTHER with the raw value kept: an empty
  answer to a load request is not a normal answer;
* ``done: true`` without ``done_reason`` (Ollama before ``done_reason`` existed) -> as ``stop``;
* an ``{"error": "..."}`` line on a 200 stream -> INTERRUPTED with the text kept, or
  :class:`StreamError` when nothing arrived; a stream without a ``done: true`` line ->
  INTERRUPTED with ``detail["incomplete_stream"]``.

Tool-call ``arguments`` are JSON objects on Ollama's wire and JSON text in
:class:`~zett_agent.ToolCall`; they are converted both ways.

Content parts (ollama ``Message.images``): a user message's images go in its
``images`` list as base64, its text parts joined to ``content``. Ollama takes no URL
(zett never fetches one: a URL part is a ConfigError), no documents or audio; a tool
result's parts are described in its text.
"""

from __future__ import annotations

import json
from typing import Any

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import (
    AssistantMessage,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent._parts import MediaPart, TextPart
from zett_agent.errors import DecodeError
from zett_agent.protocols._base import Decoder, ErrorShape, WireProtocol
from zett_agent.protocols._body import (
    add_settings,
    as_dict,
    as_int,
    as_list,
    as_text,
    load_json,
    merge_options,
    parse_json,
    raw_value,
    result_parts,
    stop,
    user_parts,
)
from zett_agent.stop import StopReason
from zett_agent.vendors import Vendor

__all__ = ["OllamaChat"]

_R = StopReason
_DONE = {"stop": _R.END_TURN, "length": _R.MAX_OUTPUT}


NESTED_OPTIONS = frozenset({"options"})
"""Ollama's ``options`` object:
``model_options`` inside them is merged key by key (``base.merge_options``)."""


class OllamaChat(WireProtocol):
    """The Ollama native chat protocol (name ``"ollama"``)."""

    name = "ollama"

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, SystemMessage):
                messages.append({"role": "system", "content": message.content})
            elif isinstance(message, UserMessage):
                parts = user_parts(message, vendor)
                texts = [message.content] + [p.text for p in parts if isinstance(p, TextPart)]
                entry: dict[str, Any] = {
                    "role": "user",
                    "content": "\n\n".join(t for t in texts if t) if parts else message.content,
                }
                images = [p.base64() for p in parts if isinstance(p, MediaPart)]
                if images:
                    entry["images"] = images
                messages.append(entry)
            elif isinstance(message, ToolResultMessage):
                text, sent = result_parts(message, vendor)
                for part in sent:
                    text = f"{text}\n{part.describe()}" if text else part.describe()
                messages.append({"role": "tool", "content": text, "tool_name": message.name})
            elif isinstance(message, AssistantMessage):
                entry = {"role": "assistant", "content": message.text}
                if message.tool_calls:
                    entry["tool_calls"] = [
                        {"function": {"name": c.name, "arguments": c.arguments_object()}}
                        for c in message.tool_calls
                    ]
                messages.append(entry)
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": request.stream,
        }
        if request.tools and request.tool_choice != "none":
            body["tools"] = [
                {"type": "function", "function": t.declaration()} for t in request.tools
            ]
        options = request.sampling(max_tokens="num_predict", stop="stop")
        if options:
            body["options"] = options
        add_settings(body, request, vendor)
        merge_options(body, request.extra_body, NESTED_OPTIONS)
        return HTTPRequest("/api/chat", body, "ndjson" if request.stream else "json")

    def decoder(self, vendor: Vendor) -> Decoder:
        return OllamaDecoder(vendor)


class OllamaDecoder(Decoder):
    """Sans-IO decoder of one Ollama chat answer (NDJSON lines or one JSON object)."""

    error_shape = ErrorShape(message=("error", "error.message"))  # {"error": "text"} mostly

    def __init__(self, vendor: Vendor) -> None:
        super().__init__(vendor)
        self.final: dict[str, Any] | None = None  # the done:true object
        self.error: Any = None
        self._calls = 0

    def feed_line(self, line: str) -> list[StreamEvent]:
        if self.final is not None or self.error is not None:
            return []  # anything after the end (a gateway's cost line) is ignored
        try:
            obj = parse_json(line)
        except (ValueError, RecursionError):
            if not line.strip():
                return []  # a blank line (the transport skips them; direct callers may not)
            obj = None
        return self._object(obj, streamed=True)

    def _object(self, obj: Any, *, streamed: bool) -> list[StreamEvent]:
        if self.final is not None or self.error is not None:
            return []
        if not isinstance(obj, dict):
            self.malformed += 1
            return []
        if obj.get("error") is not None:
            self.error = obj["error"]
            if not self.builder.has_output:
                text = as_text(as_dict(self.error).get("message")) or str(self.error)
                raise self.provider_error(text, streamed=streamed, body=obj)
            return []
        if isinstance(obj.get("model"), str):
            self.builder.model = obj["model"]
        message = as_dict(obj.get("message"))
        events = self.builder.reasoning(as_text(message.get("thinking")) or "")
        events += self.builder.text(as_text(message.get("content")) or "")
        events += self.builder.text(as_text(obj.get("response")) or "")  # /api/generate form
        for call in as_list(message.get("tool_calls")):
            events += self._tool_call(as_dict(call))
        if obj.get("done") is True:
            self.final = obj
            prompt, output = as_int(obj.get("prompt_eval_count")), as_int(obj.get("eval_count"))
            if prompt is not None or output is not None:
                self.builder.set_usage(Usage(input_tokens=prompt, output_tokens=output))
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        function = as_dict(call.get("function"))
        if not function:
            self.malformed += 1
            return []
        arguments = function.get("arguments")
        text = (
            arguments
            if isinstance(arguments, str)
            else json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        )
        key, self._calls = self._calls, self._calls + 1
        events = self.builder.tool_call(
            key, id=as_text(call.get("id")), name=as_text(function.get("name")), arguments=text
        )
        self.builder.close_call(key, True)  # Ollama sends a call whole and parsed
        return events

    def finish(self) -> ModelResponse:
        if self.error is not None:
            message = as_text(as_dict(self.error).get("message")) or str(self.error)
            return self.build(
                stop(_R.INTERRUPTED, "error", message=message, detail={"error": self.error})
            )
        if self.final is None:
            return self.build(stop(_R.INTERRUPTED, detail={"incomplete_stream": True}))
        raw = raw_value(self.final.get("done_reason"))
        reason = _R.END_TURN if raw is None else self.reason_for(raw, _DONE)
        return self.build(stop(reason, raw))  # stop with tool calls is TOOL_USE: see build

    def decode_body(self, body: bytes) -> ModelResponse:
        try:
            data = load_json(body)
        except DecodeError:
            lines = body.decode("utf-8", "replace").splitlines()
            if len(lines) < 2:  # not NDJSON sent despite stream:false either
                raise
            for line in lines:
                try:
                    self._object(json.loads(line), streamed=False)
                except (ValueError, RecursionError):
                    self.malformed += 1
            return self.finish()
        if not (isinstance(data, dict) and _RESPONSE_KEYS & data.keys()):
            raise DecodeError(f"not an Ollama /api/chat response: {body[:200]!r}")
        self._object(data, streamed=False)
        if self.final is None and self.error is None:
            self.final = {**data, "done": True}  # a whole body is complete by definition
        return self.finish()


_RESPONSE_KEYS = frozenset({"message", "done", "done_reason", "error"})
"""A non-streamed body holds at least one of these, or it is not a chat response."""
