"""OpenAI Responses API (``POST /responses``), streaming and not.

Mappings, from the API reference https://platform.openai.com/docs/api-reference/responses
(``response.status``, ``incomplete_details.reason``, ``error.code``) and the streaming
events page https://platform.openai.com/docs/api-reference/responses-streaming, as read
in ``../shared/corpus/WIRE.md`` section 3:

* ``completed`` -> END_TURN, or TOOL_USE when the output holds ``function_call`` items
  (there is no per-call finish value);
* ``incomplete`` + ``max_output_tokens`` -> MAX_OUTPUT; ``incomplete`` + ``content_filter``
  -> REFUSAL; ``incomplete`` + ``max_messages`` (newer than the seed: a limit on the
  response's output messages) -> MAX_OUTPUT, an output limit counted in messages;
  ``incomplete`` + ``steered`` (newer than the seed: a WebSocket ``response.steer`` ended
  the response at a safe boundary and the server goes on in a successor response) ->
  INTERRUPTED: the model did not end the answer, something outside it did, and
  carrying on (OTHER) would run the calls of an answer the server replaced, while
  continuing it (PAUSED) would send again what the server already took; another
  incomplete reason -> OTHER (:data:`INCOMPLETE_REASONS`);
* a ``refusal`` content part (``response.refusal.delta`` when streamed) -> REFUSAL with
  the text as ``message`` and as visible text;
* ``failed`` with a policy ``error.code`` (``bio_policy``, ``image_content_policy_violation``,
  any ``*_policy`` / content-policy code) -> REFUSAL; other failures -> INTERRUPTED when
  output arrived, else :class:`ProviderError` (:class:`StreamError` in a stream);
* an ``error`` event (fields nested under ``error`` in real streams, flat in the SDK
  type) is joined with the ``response.failed`` that follows it;
* ``cancelled`` -> INTERRUPTED; any other status -> OTHER with the raw status;
* a ``function_call`` item is finished (``ToolCall.closed``) when its
  ``output_item.done`` came with status ``completed`` (a body: the item's ``status``;
  a stream without that event: the item's status in the final response object); one
  with another status, or that no event closed, never runs.

Events after the terminal one (OpenCode Zen's ``ping`` cost frame) are ignored. A
moderation-flagged input that still completes (``moderation`` on a ``completed``
response) is what it says: a completed answer. An input image the policy blocks ends
``failed`` with ``error.code`` ``image_content_policy_violation``: REFUSAL with that
code as category.

Content parts (openai ``ResponseInputContentParam``): a user message with parts sends
``content`` as a list of ``input_text``, ``input_image`` (``image_url``: the URL or a
``data:`` URL, ``detail: "auto"``) and ``input_file`` (``file_url``, or ``file_data``
a ``data:`` URL with ``filename``). A tool result with parts sends
``function_call_output.output`` as the same kind of list (input_text, input_image,
input_file: ``ResponseFunctionCallOutputItemListParam``). No audio.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import (
    AssistantMessage,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent._parts import Part, TextPart
from zett_agent.protocols._base import Decoder, WireProtocol
from zett_agent.protocols._body import (
    add_settings,
    as_code,
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
from zett_agent.protocols._sendable import is_zetts_own, sendable_record
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import Vendor

__all__ = ["INCOMPLETE_REASONS", "OpenAIResponses"]

_R = StopReason
_TERMINAL = frozenset(
    {"response.completed", "response.incomplete", "response.failed", "response.cancelled"}
)
INCOMPLETE_REASONS: Mapping[str, StopReason] = {
    "max_output_tokens": _R.MAX_OUTPUT,
    "content_filter": _R.REFUSAL,
    # the response's limit on output messages (items) was reached: an output limit
    # counted in messages, and the output is incomplete because of it
    "max_messages": _R.MAX_OUTPUT,
    # ended at a safe boundary by a WebSocket ``response.steer``; the server goes on
    # in a successor response zett does not read: not the model's end, so nothing of
    # it runs and the host is told
    "steered": _R.INTERRUPTED,
}
"""``incomplete_details.reason`` -> :class:`StopReason`: every value of the openai
SDK's ``IncompleteDetails.reason`` (``tests/test_stop_tables_match_the_sdks.py``); any
other value is OTHER with the raw value kept."""
_REFUSAL_ERROR_TYPES = frozenset({"content_policy_violation", "refusal"})


def _is_policy(code: str | None) -> bool:
    """Whether an ``error.code`` names a usage-policy block (a refusal, not a failure)."""
    if not code:
        return False
    code = code.lower()
    return code.endswith("_policy") or "policy_violation" in code or "content_policy" in code


NESTED_OPTIONS = frozenset({"reasoning", "text"})
"""The Responses API's nested objects (``reasoning``, ``text``):
``model_options`` inside them is merged key by key (``base.merge_options``)."""


class OpenAIResponses(WireProtocol):
    """The OpenAI Responses wire protocol (name ``"openai-responses"``)."""

    name = "openai-responses"

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        system: list[str] = []
        items: list[Any] = []
        for index, message in enumerate(request.messages):
            if isinstance(message, SystemMessage):
                system.append(message.content)
            elif isinstance(message, UserMessage):
                parts = user_parts(message, vendor)
                content = _input_content(message.content, parts) if parts else message.content
                items.append({"role": "user", "content": content})
            elif isinstance(message, ToolResultMessage):
                text, sent = result_parts(message, vendor)
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.tool_call_id,
                        "output": _input_content(text, sent) if sent else text,
                    }
                )
            elif isinstance(message, AssistantMessage):
                record = sendable_record(message, index, self.name, record_rules)
                if (
                    record
                    and record.get("protocol") == self.name
                    and isinstance(record.get("output"), list)
                ):
                    items.extend(record["output"])
                    if (
                        message.text
                        and is_zetts_own(message)
                        and not _has_message(record["output"])
                    ):
                        # a cut answer: its text streamed, its message item never came
                        items.append({"role": "assistant", "content": message.text})
                    continue
                if message.text:
                    items.append({"role": "assistant", "content": message.text})
                items.extend(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }
                    for call in message.tool_calls
                )
        body: dict[str, Any] = {"model": request.model, "input": items, "stream": request.stream}
        if system:
            body["instructions"] = "\n\n".join(system)
        if request.tools:
            body["tools"] = [{"type": "function", **t.declaration()} for t in request.tools]
        if request.tool_choice:
            choice = request.tool_choice
            body["tool_choice"] = (
                choice
                if choice in ("auto", "none", "required")
                else {"type": "function", "name": choice}
            )
        # The Responses API has no stop-sequence parameter; stop_sequences is not sent.
        body.update(request.sampling(max_tokens="max_output_tokens", stop=None))
        add_settings(body, request, vendor)
        merge_options(body, request.extra_body, NESTED_OPTIONS)
        return HTTPRequest("/responses", body, "sse" if request.stream else "json")

    def decoder(self, vendor: Vendor) -> Decoder:
        return ResponsesDecoder(vendor)

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The record without ``function_call`` items, and without the reasoning items
        that led to them (the API rejects a reasoning item without its following item)."""
        if not record or not isinstance(record.get("output"), list):
            return None
        output = record["output"]
        kept = []
        for n, item in enumerate(output):
            kind = as_dict(item).get("type")
            if kind == "reasoning":
                following = [as_dict(o).get("type") for o in output[n + 1 :]]
                kind = next((k for k in following if k != "reasoning"), "function_call")
            if kind != "function_call":
                kept.append(item)
        return {**record, "output": kept} if kept else None


def _input_content(text: str, parts: tuple[Part, ...] | list[Part]) -> list[dict[str, Any]]:
    """``input_text`` / ``input_image`` / ``input_file`` items (openai
    ``ResponseInputContentParam``, ``ResponseFunctionCallOutputItemParam``)."""
    out: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "input_text", "text": part.text})
        elif part.kind == "image":
            url = part.url or part.data_url()
            out.append({"type": "input_image", "image_url": url, "detail": "auto"})
        elif part.url is not None:
            out.append({"type": "input_file", "file_url": part.url})
        else:
            name = part.name or ("document.pdf" if part.media_type == "application/pdf" else "file")
            out.append({"type": "input_file", "file_data": part.data_url(), "filename": name})
    return out


def record_rules(record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
    """The Responses API's rule for output items sent back as input
    (:mod:`zett_agent.protocols._sendable`): a ``reasoning`` item comes with the
    item it led to, right after it ("Item 'rs_...' of type 'reasoning' was provided
    without its required following item"; reasoning guide,
    https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context:
    pass back every item since the last user message, reasoning with its output).
    A stream cut after a reasoning item and before the next item's
    ``output_item.done`` leaves one alone: it is left out (the answer's text, if
    any streamed, is sent as an assistant message by the encoder)."""
    output = record.get("output")
    if not isinstance(output, list):
        return record, []
    kept: list[Any] = []
    repairs: list[str] = []
    for n, item in enumerate(output):
        if as_dict(item).get("type") == "reasoning":
            following = [as_dict(o).get("type") for o in output[n + 1 :]]
            if next((k for k in following if k != "reasoning"), None) is None:
                repairs.append(f"reasoning item {n}: no following item (left out)")
                continue
        kept.append(item)
    if not repairs:
        return record, []
    return ({**record, "output": kept} if kept else None), repairs


def _has_message(output: list[Any]) -> bool:
    return any(as_dict(item).get("type") == "message" for item in output)


class ResponsesDecoder(Decoder):
    """Sans-IO decoder of one Responses answer (SSE events or a whole response object)."""

    def record_rules(self, record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
        return record_rules(record)

    def __init__(self, vendor: Vendor) -> None:
        super().__init__(vendor)
        self.terminal: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.refusal: list[str] = []
        self._keys: dict[Any, Hashable] = {}  # output_index / item_id -> call key
        self._seen: set[tuple[str, Any]] = set()  # (kind, item) that streamed deltas
        self._items: dict[int, Any] = {}  # output_index -> finished item (for the record)
        self._done: set[Hashable] = set()  # calls whose output_item.done arrived

    # ---------------------------------------------------------------- stream
    def feed_sse(self, event: str, data: str) -> list[StreamEvent]:
        if self.terminal is not None or event == "ping":
            return []
        try:
            obj = parse_json(data)
        except (ValueError, RecursionError):
            if data.strip() in ("", "[DONE]"):
                return []
            obj = None
        if not isinstance(obj, dict):
            self.malformed += 1
            return []
        kind: str = obj["type"] if isinstance(obj.get("type"), str) else event
        try:
            return self._event(kind, obj)
        except (TypeError, ValueError, AttributeError, KeyError):
            self.malformed += 1
            return []

    def _event(self, kind: str, obj: dict[str, Any]) -> list[StreamEvent]:
        b = self.builder
        item_key = as_code(obj.get("item_id") or obj.get("output_index"))
        if kind in _TERMINAL:
            self.terminal = as_dict(obj.get("response"))
            self.terminal.setdefault("status", kind.removeprefix("response."))
            self._read_meta(self.terminal)
            if not b.has_output:  # a proxy that sends only the final object
                return self._ingest_output(as_list(self.terminal.get("output")))
            self._close_from_final(as_list(self.terminal.get("output")))
            return self._note_refusals(as_list(self.terminal.get("output")))
        if kind in ("response.created", "response.in_progress", "response.queued"):
            self._read_meta(as_dict(obj.get("response")))
        elif kind == "error":
            nested = obj.get("error")
            self.error = (
                dict(nested)
                if isinstance(nested, dict)
                else {k: v for k, v in obj.items() if k not in ("type", "sequence_number")}
            )
        elif kind == "response.output_text.delta":
            self._seen.add(("text", item_key))
            return b.text(str(obj.get("delta") or ""))
        elif kind == "response.output_text.done" and ("text", item_key) not in self._seen:
            self._seen.add(("text", item_key))
            return b.text(str(obj.get("text") or ""))
        elif kind == "response.refusal.delta":
            self._seen.add(("refusal", item_key))
            self.refusal.append(str(obj.get("delta") or ""))
            return b.text(str(obj.get("delta") or ""))
        elif kind == "response.refusal.done" and ("refusal", item_key) not in self._seen:
            self._seen.add(("refusal", item_key))
            self.refusal.append(str(obj.get("refusal") or ""))
            return b.text(str(obj.get("refusal") or ""))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return b.reasoning(str(obj.get("delta") or ""))
        elif kind == "response.output_item.added":
            return self._item_added(obj.get("output_index"), as_dict(obj.get("item")))
        elif kind == "response.function_call_arguments.delta":
            key = self._call_key(obj.get("item_id"), obj.get("output_index"))
            self._seen.add(("args", key))
            return self._opened(key, b.tool_call(key, arguments=str(obj.get("delta") or "")))
        elif kind == "response.function_call_arguments.done":
            key = self._call_key(obj.get("item_id"), obj.get("output_index"))
            if ("args", key) not in self._seen:
                self._seen.add(("args", key))
                events = b.tool_call(key, arguments=str(obj.get("arguments") or ""))
                return self._opened(key, events)
        elif kind == "response.output_item.done":
            return self._item_done(obj.get("output_index"), as_dict(obj.get("item")))
        return []

    def _call_key(self, item_id: Any, index: Any) -> Hashable:
        """One key per call, found again by its item id or its output index."""
        ids = item_id if isinstance(item_id, str) and item_id else None
        idx = index if isinstance(index, int) and not isinstance(index, bool) else None
        key = self._keys.get(ids) if ids else None
        if key is None and idx is not None:
            key = self._keys.get(("#", idx))
        if key is None:
            key = ids or ("#", idx)
        if ids:
            self._keys[ids] = key
        if idx is not None:
            self._keys["#", idx] = key
        return key

    def _item_added(self, index: Any, item: dict[str, Any]) -> list[StreamEvent]:
        if item.get("type") != "function_call":
            return []
        key = self._call_key(item.get("id"), index)
        arguments = as_text(item.get("arguments"))
        if arguments:
            self._seen.add(("args", key))
        events = self.builder.tool_call(
            key,
            id=as_text(item.get("call_id")),
            name=as_text(item.get("name")),
            arguments=arguments,
        )
        return self._opened(key, events)

    def _opened(self, key: Hashable, events: list[StreamEvent]) -> list[StreamEvent]:
        """A streamed call is open until its ``output_item.done`` says ``completed``."""
        if self.builder.call_closed(key) is None:
            self.builder.close_call(key, False)
        return events

    def _close_from_final(self, output: list[Any]) -> None:
        """A streamed call whose ``output_item.done`` never came is finished when the
        final response object lists it as ``completed`` (the provider's last word on
        the item); one it does not list, or lists otherwise, stays open."""
        for index, item in enumerate(map(as_dict, output)):
            if item.get("type") != "function_call" or item.get("status") != "completed":
                continue
            item_id = item.get("id")
            key = self._keys.get(item_id) if isinstance(item_id, str) and item_id else None
            if key is None:
                key = self._keys.get(("#", index))
            if key is not None and key not in self._done and self.builder.call_closed(key) is False:
                self.builder.close_call(key, True)

    def _item_done(self, index: Any, item: dict[str, Any]) -> list[StreamEvent]:
        if isinstance(index, int) and not isinstance(index, bool):
            self._items[index] = item
        if item.get("type") == "reasoning":
            self.opaque_progress += 1  # encrypted reasoning: progress with no event
        if item.get("type") == "function_call":
            events = self._item_added(index, {**item, "arguments": None})
            key = self._call_key(item.get("id"), index)
            if ("args", key) not in self._seen:
                self._seen.add(("args", key))
                events += self.builder.tool_call(key, arguments=as_text(item.get("arguments")))
            status = item.get("status")  # the item is done; a status other than completed
            self.builder.close_call(key, status is None or status == "completed")
            self._done.add(key)
            return events
        if item.get("type") == "message":
            found: list[StreamEvent] = []
            for kind in ("text", "refusal"):
                if {(kind, as_code(item.get("id"))), (kind, as_code(index))} & self._seen:
                    continue
                parts = [
                    p
                    for p in as_list(item.get("content"))
                    if as_dict(p).get("type") == ("output_text" if kind == "text" else "refusal")
                ]
                found += self._ingest_output([{"type": "message", "content": parts}])
            return found
        return []

    def _ingest_output(self, output: list[Any]) -> list[StreamEvent]:
        """Read whole output items (a non-stream body, or a terminal event with no deltas)."""
        b = self.builder
        events: list[StreamEvent] = []
        for index, raw in enumerate(output):
            item = as_dict(raw)
            kind = item.get("type")
            if kind == "message":
                for part in map(as_dict, as_list(item.get("content"))):
                    if part.get("type") == "output_text":
                        events += b.text(str(part.get("text") or ""))
                    elif part.get("type") == "refusal":
                        self.refusal.append(str(part.get("refusal") or ""))
                        events += b.text(str(part.get("refusal") or ""))
            elif kind == "reasoning":
                for part in map(
                    as_dict, as_list(item.get("summary")) + as_list(item.get("content"))
                ):
                    events += b.reasoning(str(part.get("text") or ""))
            elif kind == "function_call":
                key = self._call_key(item.get("id"), index)
                events += b.tool_call(
                    key,
                    id=as_text(item.get("call_id")),
                    name=as_text(item.get("name")),
                    arguments=as_text(item.get("arguments")),
                )
                status = item.get("status")  # no status: judged by the stop (build)
                b.close_call(key, None if status is None else status == "completed")
        return events

    def _note_refusals(self, output: list[Any]) -> list[StreamEvent]:
        if not self.refusal:
            for item in map(as_dict, output):
                for part in map(as_dict, as_list(item.get("content"))):
                    if part.get("type") == "refusal":
                        self.refusal.append(str(part.get("refusal") or ""))
        return []

    def _read_meta(self, response: dict[str, Any]) -> None:
        if isinstance(response.get("model"), str):
            self.builder.model = response["model"]
        usage = as_dict(response.get("usage"))
        if usage:
            self.builder.set_usage(
                Usage(
                    input_tokens=as_int(usage.get("input_tokens")),
                    output_tokens=as_int(usage.get("output_tokens")),
                    cached_input_tokens=as_int(
                        as_dict(usage.get("input_tokens_details")).get("cached_tokens")
                    ),
                    reasoning_tokens=as_int(
                        as_dict(usage.get("output_tokens_details")).get("reasoning_tokens")
                    ),
                )
            )

    # ---------------------------------------------------------------- ends
    def finish(self) -> ModelResponse:
        if self.terminal is None:
            if self.error is not None:
                return self._failed(self.error, streamed=True)
            return self._build(stop(_R.INTERRUPTED, detail={"incomplete_stream": True}))
        return self._from_response(self.terminal, streamed=True)

    def decode_body(self, body: bytes) -> ModelResponse:
        data = load_json(body)
        if not isinstance(data, dict):
            raise self.provider_error(
                "the response body is not a JSON object", streamed=False, body=data
            )
        if isinstance(data.get("response"), dict) and str(data.get("type", "")).startswith(
            "response."
        ):
            data = data["response"]  # an event wrapper instead of the response object
        if "error" in data and "status" not in data and "output" not in data:
            error = as_dict(data["error"]) or {"message": str(data["error"])}
            raise self.provider_error(
                str(error.get("message") or "error"),
                streamed=False,
                error_type=as_text(error.get("type")),
                code=as_code(error.get("code")),
                body=data,
            )
        self.terminal = data
        self._read_meta(data)
        self._ingest_output(as_list(data.get("output")))
        return self._from_response(data, streamed=False)

    def _from_response(self, response: dict[str, Any], *, streamed: bool) -> ModelResponse:
        status = raw_value(response.get("status")) or ""
        if status == "failed" or (self.error is not None and status != "completed"):
            merged = {**as_dict(response.get("error")), **(self.error or {})}
            if response.get("error_type") is not None:
                merged.setdefault("error_type", response["error_type"])
            return self._failed(merged, streamed=streamed)
        refusal = "".join(self.refusal) or None
        if status == "completed":
            if self.refusal:
                return self._build(stop(_R.REFUSAL, "refusal", message=refusal))
            return self._build(stop(_R.END_TURN, status))  # TOOL_USE with calls: see build
        if status == "incomplete":
            raw = raw_value(as_dict(response.get("incomplete_details")).get("reason")) or status
            reason = _R.REFUSAL if self.refusal else self.reason_for(raw, INCOMPLETE_REASONS)
            return self._build(stop(reason, raw, message=refusal))
        if status == "cancelled":
            return self._build(stop(_R.INTERRUPTED, status))
        return self._build(stop(_R.OTHER, status or None))

    def _failed(self, error: dict[str, Any], *, streamed: bool) -> ModelResponse:
        code = as_text(str(error["code"]) if error.get("code") is not None else None)
        kind = as_text(error.get("type"))
        message = as_text(error.get("message"))
        if (
            _is_policy(code)
            or _is_policy(kind)
            or as_text(error.get("error_type")) in _REFUSAL_ERROR_TYPES
        ):
            raw = code or kind or str(error.get("error_type"))
            return self._build(stop(_R.REFUSAL, raw, message=message, detail={"error": error}))
        if self.builder.has_output:
            return self._build(
                stop(
                    _R.INTERRUPTED,
                    code or kind,
                    message=message,
                    detail={"error": error},
                )
            )
        raise self.provider_error(
            message or "the response failed",
            streamed=streamed,
            error_type=kind or code,
            code=code,
            body=error,
        )

    def _build(self, info: StopInfo) -> ModelResponse:
        output = as_list(as_dict(self.terminal).get("output")) or [
            self._items[i] for i in sorted(self._items)
        ]
        output = [self._read_once(index, item) for index, item in enumerate(output)]
        record = {"protocol": "openai-responses", "output": output} if output else None
        return self.build(info, record)

    def _read_once(self, index: int, item: Any) -> Any:
        """A ``function_call`` item whose streamed arguments repeated themselves (an
        exact repeat, cumulative deltas) with the arguments as the call runs them, so
        the replayed item says what the tool was given."""
        fields = as_dict(item)
        if fields.get("type") != "function_call":
            return item
        item_id = fields.get("id")
        key = self._keys.get(item_id) if isinstance(item_id, str) and item_id else None
        read = self.builder.read_arguments(key if key is not None else self._keys.get(("#", index)))
        if read is None or read[1] not in ("repeated", "cumulative"):
            return item
        return {**fields, "arguments": read[0]}
