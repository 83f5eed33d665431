"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``, Gemini API and Vertex.

Mappings, from https://ai.google.dev/api/generate-content#FinishReason (``FinishReason``,
``BlockReason``), the Vertex reference for ``FunctionCall.partialArgs`` / ``willContinue``
(https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Content) and
``../shared/corpus/WIRE.md`` section 4:

* ``STOP`` -> END_TURN, or TOOL_USE when the candidate holds ``functionCall`` parts (Gemini
  has no tool finish value; the call and the STOP may come in one chunk or two);
* ``MAX_TOKENS`` -> MAX_OUTPUT (also with no parts at all, when thinking used the budget);
* ``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
  ``IMAGE_SAFETY``, ``IMAGE_PROHIBITED_CONTENT``, ``IMAGE_RECITATION`` -> REFUSAL with the
  value as category, ``finishMessage`` as message and ``safetyRatings`` in detail;
* newer than the seed's table (google-genai 3.6.1 ``FinishReason``), policy blocks, so
  REFUSAL with the value as category like the rest: Vertex ``MODEL_ARMOR`` (blocked by
  Model Armor), Gemini API ``ESCALATION`` (filtered by an escalation rule) and
  ``PUP_LIMITED_DISABLED`` (the account is limited or disabled for Prohibited Use Policy
  violations). The last is a verdict on the account, but it arrives as a finish reason
  of a 200 answer, possibly after output: a typed error would lose that output and
  invite retries that cannot help, while REFUSAL keeps the text, withholds tool calls,
  ends the request and names the category for the host;
* ``CONTINUATION`` (the per-request token limit; generation is not complete) -> PAUSED,
  with the candidate's ``continuationToken`` in ``detail["continuation_token"]``. The
  loop continues a pause by sending the conversation again; for this one the encoder
  sends the request the paused answer answered (without that answer) and the token as
  ``continuationToken``, as google-genai's automatic continuation does;
* no candidates + ``promptFeedback.blockReason`` -> REFUSAL for every value (category =
  block reason, ``blockReasonMessage`` as message), Vertex's ``MODEL_ARMOR`` and
  ``JAILBREAK`` included;
* anything else (``OTHER``, ``MALFORMED_FUNCTION_CALL``, ``LANGUAGE``,
  ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``, ``MALFORMED_RESPONSE``, numbers)
  -> OTHER with the raw value as a string (:data:`FINISH_REASONS` lists the SDK's
  values explicitly);
* the stream is read to its end, and so is a body holding a list of chunks: a
  ``finishReason`` followed by more content was not the end (gemini-3 streams can begin
  with empty candidates saying ``STOP``); of the finishes after the last content the
  last one wins, except that ``STOP`` never replaces an abnormal value (``SAFETY`` then
  ``STOP`` stays ``SAFETY``); ``detail["finish_reasons"]`` lists them all when they
  differ. A chunk after the finish that repeats the finished chunk's parts exactly is
  read once (``detail["repeated_chunks"]``); an error chunk after the finish of an answer
  with content is not read;
* no candidates and no block reason: INTERRUPTED, because the provider ended the step
  without output and without saying why (``detail["no_candidates"]``), the same for a body
  and for a stream whose chunks came without candidates (``"candidates": []``): such a
  stream answered, it is not one that sent nothing, so it is not retried. A stream that
  sent nothing, or candidates but never a finishReason, is INTERRUPTED with
  ``detail["incomplete_stream"]`` (the transport retries it when nothing arrived at all);
* a call whose last fragment said ``willContinue: true`` was not finished by the wire
  (``ToolCall.closed`` False, never run) unless the finish is ``STOP``: Vertex sometimes
  leaves out the empty ``functionCall{}`` terminator of a finished call (corpus
  ``vertex__stream_partialArgs_missing_terminal_functionCall.sse``);
* an ``{"error": ...}`` chunk in a 200 stream: INTERRUPTED with the text kept, or
  :class:`StreamError` when nothing arrived.

``usageMetadata`` comes on every chunk and is not cumulative: the last one with counts
wins. Output tokens include ``thoughtsTokenCount``; input tokens include
``toolUsePromptTokenCount`` (server tools' context: web search results).

An input the provider blocks (an image included) arrives as ``promptFeedback.blockReason``
(google-genai ``BlockedReason``: ``SAFETY``, ``OTHER``, ``BLOCKLIST``,
``PROHIBITED_CONTENT``, ``IMAGE_SAFETY``, ``MODEL_ARMOR``, ``JAILBREAK``): REFUSAL with
the value as category, on both paths. The ``IMAGE_*`` finish reasons are about images
the model generated.

Content parts (google-genai ``Part``): bytes are ``inlineData`` (``mimeType``, base64
``data``), a URL is ``fileData`` (``mimeType``, ``fileUri``: a Files API, ``gs://`` or
``https`` URI the provider reads). A tool result's image and document parts go in
``functionResponse.parts`` as ``inlineData`` (google-genai ``FunctionResponsePart``,
multimodal function responses of Gemini 3 models); its text stays in ``response``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent._parts import Part, TextPart
from zett_agent.protocols._base import Decoder, ErrorFields, ErrorShape, WireProtocol
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
from zett_agent.protocols._builder import Pieces
from zett_agent.protocols._sendable import sendable_record
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import Vendor

__all__ = ["CONTINUATION_TOKEN", "FINISH_REASONS", "Gemini", "GeminiDecoder"]

_R = StopReason
_REFUSALS = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    # newer than the seed's table (google-genai FinishReason): policy blocks
    "MODEL_ARMOR",  # Vertex: blocked by Model Armor
    "ESCALATION",  # Gemini API: filtered by an escalation rule
    "PUP_LIMITED_DISABLED",  # the account is limited for Prohibited Use Policy violations
]
_KNOWN_AS_OTHER = [
    "FINISH_REASON_UNSPECIFIED",
    "OTHER",
    "LANGUAGE",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE",
    "NO_IMAGE",
    "IMAGE_OTHER",
]
FINISH_REASONS: Mapping[str, StopReason] = {
    "STOP": _R.END_TURN,
    "MAX_TOKENS": _R.MAX_OUTPUT,
    "CONTINUATION": _R.PAUSED,  # the per-request token limit; continued with its token
    **dict.fromkeys(_REFUSALS, _R.REFUSAL),
    **dict.fromkeys(_KNOWN_AS_OTHER, _R.OTHER),
}
"""Gemini ``finishReason`` -> :class:`StopReason`: every value of google-genai's
``FinishReason`` is a key (``tests/test_stop_tables_match_the_sdks.py``), the ones the
seed calls OTHER explicitly so; a value not here is OTHER with the raw value kept."""

CONTINUATION_TOKEN = "continuation_token"
"""``StopInfo.detail`` key: a candidate's ``continuationToken`` (sent back as the
request's ``continuationToken`` when a CONTINUATION pause is continued)."""
_CHOICE = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d{1,6})\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
_MAX_INDEX = 10_000
_COUNTS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
)
"""The ``usageMetadata`` counts read: input (prompt + ``toolUsePromptTokenCount``, the
tokens of tool results and server-tool context the model read), output (candidates +
thoughts), reasoning, cached (``cachedContentTokenCount`` counts implicit-cache hits
too). google-genai ``GenerateContentResponseUsageMetadata``: ``total_token_count`` =
prompt + candidates + tool_use_prompt + thoughts, so input + output is that total."""
_GROUNDING = ("groundingMetadata", "urlContextMetadata", "citationMetadata")
"""Candidate fields of server tools' citations (``google_search``, ``url_context``): kept
in the provider record beside ``content``."""


NESTED_OPTIONS = frozenset({"generationConfig", "toolConfig"})
"""Gemini's nested objects (``generationConfig``, ``toolConfig``):
``model_options`` inside them is merged key by key (``base.merge_options``)."""


class Gemini(WireProtocol):
    """The Gemini wire protocol (name ``"gemini"``), for Google AI Studio and Vertex AI."""

    name = "gemini"

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        token = _continuation_token(request.messages)
        if token is not None:  # continue a CONTINUATION pause: its request, and the token
            request = replace(request, messages=request.messages[:-1])
        model = request.model.removeprefix("models/")
        system = [m.content for m in request.messages if isinstance(m, SystemMessage)]
        body: dict[str, Any] = {"contents": _contents(request, vendor)}
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        if request.tools:
            body["tools"] = [{"functionDeclarations": [t.declaration() for t in request.tools]}]
        if request.tool_choice:
            mode = _CHOICE.get(request.tool_choice)
            config: dict[str, Any] = {"mode": mode or "ANY"}
            if mode is None:
                config["allowedFunctionNames"] = [request.tool_choice]
            body["toolConfig"] = {"functionCallingConfig": config}
        generation = request.sampling(max_tokens="maxOutputTokens", stop="stopSequences")
        if generation:
            body["generationConfig"] = generation
        if token is not None:
            body["continuationToken"] = token
        add_settings(body, request, vendor)
        merge_options(body, request.extra_body, NESTED_OPTIONS)
        if request.stream:
            return HTTPRequest(
                f"/models/{model}:streamGenerateContent", body, "sse", params={"alt": "sse"}
            )
        return HTTPRequest(f"/models/{model}:generateContent", body, "json")

    def decoder(self, vendor: Vendor) -> Decoder:
        return GeminiDecoder(vendor)

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        content = as_dict(as_dict(record).get("content"))
        parts = [p for p in as_list(content.get("parts")) if "functionCall" not in as_dict(p)]
        return {**as_dict(record), "content": {**content, "parts": parts}} if parts else None


def _continuation_token(messages: Sequence[Message]) -> str | None:
    """The ``continuationToken`` to send: that of a last message paused by
    ``CONTINUATION`` (kept in its ``stop.detail``), else None."""
    last = messages[-1] if messages else None
    if not isinstance(last, AssistantMessage) or last.stop is None:
        return None
    token = last.stop.detail.get(CONTINUATION_TOKEN)
    paused = last.stop.reason is _R.PAUSED and last.stop.raw == "CONTINUATION"
    return token if paused and isinstance(token, str) and token else None


_PART_METADATA = frozenset(
    {"thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution"}
)
"""Part fields that are not its data (``Part`` in https://ai.google.dev/api/caching#Part:
"data" is a union field, one of ``text``, ``inlineData``, ``functionCall``...)."""


def record_rules(record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
    """Gemini's rule for a model turn sent back (:mod:`zett_agent.protocols._sendable`):
    every part holds its data (``Part`` is a union of one data field, with metadata
    such as ``thoughtSignature`` beside it, https://ai.google.dev/api/caching#Part;
    a part of metadata alone is rejected), and the turn has a part left
    (``Content.parts``). A part of metadata alone is left out."""
    content = as_dict(record.get("content"))
    parts = content.get("parts")
    if not isinstance(parts, list):
        return record, []
    kept: list[Any] = []
    repairs: list[str] = []
    for n, part in enumerate(parts):
        if isinstance(part, Mapping) and not set(part) - _PART_METADATA:
            repairs.append(f"part {n}: no data, only {sorted(part) or 'nothing'} (left out)")
            continue
        kept.append(part)
    if not repairs:
        return record, []
    if not kept:
        return None, repairs
    return {**record, "content": {**content, "parts": kept}}, repairs


def _contents(request: ModelRequest, vendor: Vendor) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    call_ids: set[str] = set()  # ids Gemini gave its calls, to echo in functionResponse
    for index, message in enumerate(request.messages):
        if isinstance(message, UserMessage):
            given = user_parts(message, vendor)
            wire = _parts(message.content, given) if given else [{"text": message.content}]
            contents.append({"role": "user", "parts": wire})
        elif isinstance(message, AssistantMessage):
            record = as_dict(sendable_record(message, index, "gemini", record_rules))
            content = as_dict(record.get("content"))
            if record.get("protocol") == "gemini" and as_list(content.get("parts")):
                for part in map(as_dict, content["parts"]):
                    if isinstance(as_dict(part.get("functionCall")).get("id"), str):
                        call_ids.add(part["functionCall"]["id"])
                contents.append({**content, "role": "model"})
                continue
            parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
            for call in message.tool_calls:
                parts.append({"functionCall": {"name": call.name, "args": call.arguments_object()}})
            if parts:
                contents.append({"role": "model", "parts": parts})
        elif isinstance(message, ToolResultMessage):
            text, sent = result_parts(message, vendor)
            for extra in sent:
                if isinstance(extra, TextPart):
                    text = f"{text}\n{extra.text}" if text else extra.text
            answer = {"error" if message.is_error else "result": text}
            reply: dict[str, Any] = {"name": message.name, "response": answer}
            media = [p for p in _parts("", sent) if "inlineData" in p]
            if media:
                reply["parts"] = media
            if message.tool_call_id in call_ids:
                reply["id"] = message.tool_call_id
            part = {"functionResponse": reply}
            last = contents[-1] if contents else None
            if (
                last
                and last["role"] == "user"
                and all("functionResponse" in p for p in last["parts"])
            ):
                last["parts"].append(part)  # parallel results go back in one turn
            else:
                contents.append({"role": "user", "parts": [part]})
    return contents


def _parts(text: str, parts: tuple[Part, ...] | list[Part]) -> list[dict[str, Any]]:
    """``text`` and ``parts`` as Gemini parts (google-genai ``Part``: text,
    ``inlineData``, ``fileData``)."""
    out: list[dict[str, Any]] = [{"text": text}] if text else []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"text": part.text})
        elif part.url is not None:
            out.append({"fileData": {"mimeType": part.media_type, "fileUri": part.url}})
        else:
            out.append({"inlineData": {"mimeType": part.media_type, "data": part.base64()}})
    return out


@dataclass
class _Call:
    key: int
    id: str | None
    name: str | None
    args: Any = field(default_factory=dict)
    part: dict[str, Any] = field(default_factory=dict)  # the part that started the call
    whole: bool = False  # the call came in one part: replay that part unchanged


class GeminiDecoder(Decoder):
    """Sans-IO decoder of one Gemini answer (``alt=sse`` chunks or a whole body)."""

    error_shape = ErrorShape(type=("error.status", "error.type"))  # status: "RESOURCE_EXHAUSTED"

    def record_rules(self, record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
        return record_rules(record)

    def __init__(self, vendor: Vendor) -> None:
        super().__init__(vendor)
        self.candidate: dict[str, Any] | None = None  # the finish in force (see _finished)
        self.block: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.saw_candidate = False
        self.answered = False  # a chunk that is not an error arrived
        self.parts: list[dict[str, Any]] = []  # the provider record, merged
        self._merged: dict[int, tuple[dict[str, Any], Pieces]] = {}  # text parts' pieces
        self._tail: tuple[dict[str, Any], Pieces, bool] | None = None  # the last merged part
        self._usage_meta: dict[str, Any] | None = None  # the last usageMetadata with counts
        self._open: _Call | None = None
        self._calls = 0
        self._done = False  # an error chunk after output ended the answer
        self._taken = 0  # content pieces read (text, reasoning, calls, kept parts)
        self._finishes: list[str] = []  # every finishReason seen, in order
        self._finished_parts: Any = None  # the parts of the last chunk with content
        self._repeats = 0  # chunks after a finish that repeated its content exactly
        self._continuation: str | None = None  # the latest continuationToken
        self._grounding: dict[str, Any] = {}  # citations of server tools, for the record

    # ---------------------------------------------------------------- feeding
    # The hot path: one chunk per event, most of them one text part. JSON from
    # json.loads holds only dict and list containers: ``type(x) is dict`` suffices.
    def feed_sse(self, event: str, data: str) -> list[StreamEvent]:
        if self._done or event == "ping":
            return []
        try:
            obj = parse_json(data)
        except (ValueError, RecursionError):
            if data.strip() not in ("", "[DONE]"):
                self.malformed += 1
            return []
        if type(obj) is not list:
            return self._chunk(obj, streamed=True)
        events: list[StreamEvent] = []
        for chunk in obj:
            events += self._chunk(chunk, streamed=True)
        return events

    def _chunk(self, obj: Any, *, streamed: bool) -> list[StreamEvent]:
        if self._done:
            return []
        if type(obj) is not dict:
            self.malformed += 1
            return []
        if "error" in obj and not obj.get("candidates"):
            if self.candidate is not None and self._taken:
                return []  # the answer had finished: a relay's trailing error is not read
            error = as_dict(obj["error"]) or {"message": str(obj["error"])}
            if not self.builder.has_output:
                raise self.provider_error(
                    str(error.get("message") or "error"),
                    streamed=streamed,
                    error_type=as_text(error.get("status")),
                    code=as_code(error.get("code")),
                    body=error,
                )
            self.error, self._done = error, True
            return []
        self.answered = True
        meta = obj.get("usageMetadata")  # on every chunk; the last one with counts wins
        if (
            meta
            and type(meta) is dict
            and (
                type(meta.get("promptTokenCount")) is int
                or any(type(meta.get(key)) is int for key in _COUNTS)
            )
        ):  # not Vertex's {"trafficType": ...} alone
            self._usage_meta = meta  # made a Usage once, in _build
        version = obj.get("modelVersion")
        if type(version) is str:
            self.builder.model = version
        feedback = obj.get("promptFeedback")
        if feedback and type(feedback) is dict and feedback.get("blockReason") is not None:
            self.block = feedback
        candidates = obj.get("candidates")
        if type(candidates) is not list or not candidates:
            return []
        candidate = candidates[0]
        if type(candidate) is not dict or candidate.get("index") not in (None, 0):
            candidate = next(
                (c for c in map(as_dict, candidates) if c.get("index") in (None, 0)), None
            )
            if candidate is None:
                return []
        self.saw_candidate = True
        for key in _GROUNDING:  # Google Search / URL context citations (last wins)
            if type(candidate.get(key)) is dict:
                self._grounding[key] = candidate[key]
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        taken = self._taken
        if type(parts) is not list:
            events: list[StreamEvent] = []
        elif self.candidate is not None and parts and _same(parts, self._finished_parts):
            events = []  # the finished answer's last content sent again: read once
            self._repeats += 1
        elif len(parts) == 1:
            events = self._part(parts[0])
        else:
            events = []
            for part in parts:
                events += self._part(part)
        if self._taken != taken:
            self._finished_parts = parts
            self.candidate = None  # content after a finishReason: that was not the end
        if type(candidate.get("continuationToken")) is str:
            self._continuation = candidate["continuationToken"]
        if candidate.get("finishReason") not in (None, ""):
            events += self._finished(candidate)
        return events

    def _finished(self, candidate: dict[str, Any]) -> list[StreamEvent]:
        """A candidate with a ``finishReason``. The stream is read to its end: this is
        the answer's finish unless content follows it (an empty candidate with STOP
        before the answer, as gemini-3 streams sometimes begin); of the finishes after
        the last content the last wins, except that STOP never replaces an abnormal
        value (SAFETY then STOP stays SAFETY)."""
        raw = raw_value(candidate.get("finishReason")) or ""
        self._finishes.append(raw)
        # a call whose last fragment said willContinue is open, except under STOP
        # (Vertex sometimes leaves out the empty terminator of a finished call)
        events = self._close(closed=raw == "STOP")
        held = self.candidate
        if held is None or raw != "STOP" or raw_value(held.get("finishReason")) == "STOP":
            self.candidate = candidate
        return events

    def _part(self, part: Any) -> list[StreamEvent]:
        if type(part) is not dict:
            self.malformed += 1
            return []
        text = part.get("text")
        if type(text) is str and len(part) == 1:  # plain text, the most common part
            tail = self._tail
            if tail is not None and not tail[2] and self.parts[-1] is tail[0]:
                if text:
                    self._taken += 1
                tail[1].append(text)
                return self.builder.text(text)
        elif type(part.get("functionCall")) is dict:
            return self._function_call(part["functionCall"], part)
        if type(text) is not str:
            self.parts.append(part)  # inlineData, executableCode...: kept for replay
            self.opaque_progress += 1  # a thought signature alone is progress too
            self._taken += 1
            return []
        thought = part.get("thought") is True
        last = self.parts[-1] if self.parts else None
        plain = len(part) == 1 or (len(part) == 2 and "thought" in part)  # text[, thought]
        if text or not plain:
            self._taken += 1
        if (
            plain
            and last is not None
            and isinstance(last.get("text"), str)
            and (last.get("thought") is True) == thought
            and "thoughtSignature" not in last
        ):
            merged = self._merged.get(id(last))
            if merged is None:  # joined in _build: += would copy the text per chunk
                merged = self._merged[id(last)] = (last, Pieces())
                merged[1].append(last["text"])
            merged[1].append(text)
            self._tail = (last, merged[1], thought)
        elif text or not plain:
            self.parts.append(dict(part))
        return self.builder.reasoning(text) if thought else self.builder.text(text)

    def _function_call(self, call: dict[str, Any], part: dict[str, Any]) -> list[StreamEvent]:
        partial = as_list(call.get("partialArgs"))
        more = call.get("willContinue") is True
        events: list[StreamEvent] = []
        if as_text(call.get("name")) or isinstance(call.get("args"), dict) or self._open is None:
            if not (partial or more or call.get("name") or call.get("args")):
                return []  # a stray terminator
            self._taken += 1
            events += self._close()
            args = call.get("args")
            self._open = _Call(
                self._calls,
                as_text(call.get("id")),
                as_text(call.get("name")),
                dict(args) if isinstance(args, dict) else {},
                part,
                not (partial or more),
            )
            self._calls += 1
            events += self.builder.tool_call(self._open.key, id=self._open.id, name=self._open.name)
        elif not partial and not more:
            return self._close()  # the empty functionCall{} terminator
        else:
            self._taken += 1  # more of the open call
        for piece in partial:
            if not self._apply(self._open, as_dict(piece)):
                self.malformed += 1
        return events if more else events + self._close()

    def _apply(self, call: _Call, piece: dict[str, Any]) -> bool:
        """Put one Vertex ``partialArgs`` value at its JSON path; False if it does not fit."""
        path = piece.get("jsonPath")
        if not isinstance(path, str) or not path.startswith("$"):
            return False
        tokens: list[str | int] = []
        pos = 1
        while pos < len(path):
            match = _PATH_TOKEN.match(path, pos)
            if match is None:
                return False
            name, index, quoted1, quoted2 = match.groups()
            tokens.append(int(index) if index is not None else (name or quoted1 or quoted2 or ""))
            pos = match.end()
        if not tokens or any(isinstance(t, int) and t > _MAX_INDEX for t in tokens):
            return False
        append = isinstance(piece.get("stringValue"), str)
        if append:
            value: Any = piece["stringValue"]
        elif isinstance(piece.get("numberValue"), int | float) and not isinstance(
            piece["numberValue"], bool
        ):
            number = piece["numberValue"]
            value = int(number) if isinstance(number, float) and number.is_integer() else number
        elif isinstance(piece.get("boolValue"), bool):
            value = piece["boolValue"]
        elif "nullValue" in piece:
            value = None
        else:
            return True  # no value: nothing to add
        node: Any = call.args
        for i, token in enumerate(tokens):
            if isinstance(token, int):
                if not isinstance(node, list):
                    return False
                node.extend([None] * (token + 1 - len(node)))
                current = node[token]
            elif isinstance(node, dict):
                current = node.get(token)
            else:
                return False
            if i == len(tokens) - 1:
                node[token] = current + value if append and isinstance(current, str) else value
                break
            if current is None:
                current = node[token] = [] if isinstance(tokens[i + 1], int) else {}
            node = current
        return True

    def _close(self, *, closed: bool = True) -> list[StreamEvent]:
        """End the call being read; ``closed``: whether the wire finished it."""
        call, self._open = self._open, None
        if call is None:
            return []
        self.builder.close_call(call.key, closed)
        if call.whole:
            self.parts.append(call.part)
        else:  # joined from Vertex partialArgs: the whole call, signature kept
            payload: dict[str, Any] = {"name": call.name or "", "args": call.args}
            if call.id:
                payload["id"] = call.id
            self.parts.append({**call.part, "functionCall": payload})
        try:
            arguments = json.dumps(call.args, ensure_ascii=False)
        except (ValueError, RecursionError):  # pragma: no cover - args come from JSON
            arguments, self.malformed = "{}", self.malformed + 1
        return self.builder.tool_call(call.key, arguments=arguments)

    # ---------------------------------------------------------------- ends
    def finish(self) -> ModelResponse:
        return self._end(streamed=True)

    def decode_body(self, body: bytes) -> ModelResponse:
        data = load_json(body)
        for chunk in data if isinstance(data, list) else [data]:
            self._chunk(chunk, streamed=False)
        return self._end(streamed=False)

    def error_body(self, body: bytes) -> Any:
        data = super().error_body(body)
        # some Google front ends wrap the error in a list
        return data[0] if isinstance(data, list) and data else data

    def error_fields(self, data: Any) -> ErrorFields:
        retry_delay = _retry_delay(as_dict(as_dict(data).get("error")))
        return super().error_fields(data)._replace(retry_after=retry_delay)

    def _end(self, *, streamed: bool) -> ModelResponse:
        self._close(closed=False)  # still waiting for a fragment: never finished
        if self.error is not None:
            code = as_text(self.error.get("status")) or as_code(self.error.get("code"))
            raw = None if code is None else str(code)
            return self._build(
                stop(
                    _R.INTERRUPTED,
                    raw,
                    message=as_text(self.error.get("message")),
                    detail={"error": self.error},
                )
            )
        if self.candidate is None and self.block is not None:
            raw = raw_value(self.block.get("blockReason"))
            return self._build(
                stop(
                    _R.REFUSAL,
                    raw,
                    message=as_text(self.block.get("blockReasonMessage")),
                    detail={"prompt_feedback": self.block},
                )
            )
        if self.candidate is None and not self.saw_candidate and (self.answered or not streamed):
            # the provider answered (a chunk, or a body) without candidates: the same
            # stop on both paths, and not a stream that sent nothing (no retry)
            return self._build(
                stop(
                    _R.INTERRUPTED,
                    message="the provider returned no candidates",
                    detail={"no_candidates": True},
                )
            )
        if self.candidate is None:
            detail: dict[str, Any] = {"incomplete_stream": True} if streamed else {}
            if self.saw_candidate and not streamed:
                detail["no_finish_reason"] = True
            if self._finishes:  # every finish seen came before more content
                detail["finish_reasons"] = self._finishes
            return self._build(stop(_R.INTERRUPTED, detail=detail))
        raw = raw_value(self.candidate.get("finishReason")) or ""
        message = as_text(self.candidate.get("finishMessage"))
        reason = self.reason_for(raw, FINISH_REASONS)  # STOP with calls is TOOL_USE: build
        detail = {}
        if reason is _R.REFUSAL and isinstance(self.candidate.get("safetyRatings"), list):
            detail["safety_ratings"] = self.candidate["safetyRatings"]
        if len(set(self._finishes)) > 1:
            detail["finish_reasons"] = self._finishes
        if self._repeats:
            detail["repeated_chunks"] = self._repeats
        if self._continuation is not None:
            detail[CONTINUATION_TOKEN] = self._continuation
        return self._build(stop(reason, raw, message=message, detail=detail))

    def _build(self, info: StopInfo) -> ModelResponse:
        if self._usage_meta is not None:
            counts = (as_int(self._usage_meta.get(k)) for k in _COUNTS)
            prompt, out, thoughts, cached, tool_use = counts
            total = None if out is None and thoughts is None else (out or 0) + (thoughts or 0)
            if tool_use is not None:
                prompt = (prompt or 0) + tool_use
            self.builder.set_usage(Usage(prompt, total, cached, thoughts))
        for part, pieces in self._merged.values():
            part["text"] = pieces.join()
        record: dict[str, Any] | None = (
            {"protocol": "gemini", "content": {"role": "model", "parts": self.parts}}
            if self.parts
            else None
        )
        if record is not None and self._grounding:
            record.update(self._grounding)  # kept with the answer; only content is replayed
        return self.build(info, record)


def _same(a: Any, b: Any) -> bool:
    """``a == b``, False where comparing would pass Python's recursion limit."""
    try:
        return bool(a == b)
    except RecursionError:
        return False


def _retry_delay(error: dict[str, Any]) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``"retryDelay": "34.4s"``)."""
    for detail in map(as_dict, as_list(error.get("details"))):
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None
