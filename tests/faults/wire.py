"""Small provider streams, one builder per wire protocol, for the fault matrix.

Each :class:`Wire` knows how its protocol puts an answer on the wire: the events
before any output (``head``), one text delta, the start and the argument
fragments of a tool call, the terminal events, an error event inside a 200
stream, and an HTTP error body. The fault tests cut, stall, corrupt and repeat
these pieces. Shapes follow ``tests/recordings``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from zett_agent.testing import Reply

TOOL = "write_note"
CALL_ID = "call_1"


def whole_text(text: str) -> dict[str, Any]:
    """A whole (non-streamed) answer holding ``text`` that ends normally, per protocol."""
    return {
        "anthropic": {
            "type": "message",
            "model": "m",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
        "openai-chat": {
            "choices": [
                {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ]
        },
        "openai-responses": {
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
        },
        "gemini": {
            "candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}]
        },
        "ollama": {"message": {"role": "assistant", "content": text}, "done": True},
    }


WHOLE_TEXT = whole_text("ok")


def sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def ndjson(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


@dataclass(frozen=True)
class Call:
    """A tool call: its argument ``{"text": "".join(pieces)}`` arrives in pieces."""

    pieces: tuple[str, ...]

    @property
    def arguments(self) -> dict[str, str]:
        return {"text": "".join(self.pieces)}


class Wire:
    name: str
    vendor: str
    content_type = "text/event-stream"
    error_retryable = True
    """Whether this protocol's in-stream error event (``error_event``) is retryable."""

    def head(self) -> list[bytes]:
        return []

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        raise NotImplementedError

    def close_text(self) -> list[bytes]:
        return []

    def tool_start(self) -> list[bytes]:
        raise NotImplementedError

    def tool_args(self, call: Call) -> list[bytes]:
        """The argument fragments (the first one opens the JSON, the last closes it)."""
        raise NotImplementedError

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        raise NotImplementedError

    def error_event(self, message: str) -> list[bytes]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "code": None}}

    def garbage(self) -> bytes:
        return sse("{not json")

    def keepalive(self, kind: str) -> bytes:
        """A piece that is not content progress: ``"comment"`` (an SSE comment, as
        gateways send; a blank NDJSON line) or ``"empty"`` (the protocol's own event
        with no content: Anthropic's ``ping``, an empty delta elsewhere)."""
        if kind == "comment":
            return b": processing\n\n" if self.content_type == "text/event-stream" else b"\n"
        return self.text("")[0]

    def truncated(self) -> bytes:
        """An event cut off in the middle of its JSON."""
        whole = self.text("lost")[0]
        return whole[: len(whole) // 2] + b"\n\n"

    # ------------------------------------------------------------ whole answers
    def answer(self, texts: list[str], call: Call | None = None) -> list[bytes]:
        chunks = [*self.head()]
        for piece in texts:
            chunks += self.text(piece)
        if call is not None:
            chunks += self.tool_start() + self.tool_args(call)
        else:
            chunks += self.close_text()
        return chunks + self.tail("".join(texts), call)

    def reply(self, chunks: list[bytes], **options: Any) -> Reply:
        return Reply(chunks, content_type=self.content_type, **options)


class Anthropic(Wire):
    name, vendor = "anthropic", "anthropic"

    def head(self) -> list[bytes]:
        start = {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        return [sse(start, "message_start"), sse(block, "content_block_start")]

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        data: dict[str, Any] = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": piece},
        }
        if padding:
            data["padding"] = padding
        return [sse(data, "content_block_delta")]

    def close_text(self) -> list[bytes]:
        return [sse({"type": "content_block_stop", "index": 0}, "content_block_stop")]

    def tool_start(self) -> list[bytes]:
        start = {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": CALL_ID, "name": TOOL, "input": {}},
        }
        return [*self.close_text(), sse(start, "content_block_start")]

    def tool_args(self, call: Call) -> list[bytes]:
        pieces = ['{"text": "', *call.pieces, '"}']
        return [
            sse(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                },
                "content_block_delta",
            )
            for p in pieces
        ]

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        end = (
            [sse({"type": "content_block_stop", "index": 1}, "content_block_stop")] if call else []
        )
        delta = {
            "type": "message_delta",
            "usage": {"output_tokens": 5},
            "delta": {"stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None},
        }
        return [*end, sse(delta, "message_delta"), sse({"type": "message_stop"}, "message_stop")]

    def keepalive(self, kind: str) -> bytes:
        if kind == "empty":
            return sse({"type": "ping"}, "ping")
        return super().keepalive(kind)

    def error_event(self, message: str) -> list[bytes]:
        data = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
        return [sse(data, "error")]

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}
        kind = kinds.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


class OpenAIChat(Wire):
    name, vendor = "openai-chat", "openai"
    _id: ClassVar[dict[str, str]] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-x",
    }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse({**self._id, "choices": [choice], **extra})

    def head(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        extra = {"padding": padding} if padding else {}
        return [self._chunk({"content": piece}, **extra)]

    def tool_start(self) -> list[bytes]:
        call = {
            "index": 0,
            "id": CALL_ID,
            "type": "function",
            "function": {"name": TOOL, "arguments": ""},
        }
        return [self._chunk({"tool_calls": [call]})]

    def tool_args(self, call: Call) -> list[bytes]:
        pieces = ['{"text": "', *call.pieces, '"}']
        return [
            self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
            for p in pieces
        ]

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return [
            self._chunk({}, "tool_calls" if call else "stop"),
            sse({**self._id, "choices": [], "usage": usage}),
            sse("[DONE]"),
        ]

    def error_event(self, message: str) -> list[bytes]:
        # OpenRouter's mid-stream error chunk (code = the HTTP status it stands for)
        return [
            sse(
                {
                    **self._id,
                    "error": {"code": 503, "message": message},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                }
            )
        ]


class OpenAIResponses(Wire):
    name, vendor = "openai-responses", "openai-responses"

    def head(self) -> list[bytes]:
        response = {
            "id": "resp_1",
            "object": "response",
            "status": "in_progress",
            "model": "gpt-x",
            "output": [],
        }
        item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
        return [
            sse({"type": "response.created", "response": response}, "response.created"),
            sse(
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                "response.output_item.added",
            ),
        ]

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        data: dict[str, Any] = {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
        }
        if padding:
            data["padding"] = padding
        return [sse(data, "response.output_text.delta")]

    def tool_start(self) -> list[bytes]:
        item = {
            "id": "fc_1",
            "type": "function_call",
            "call_id": CALL_ID,
            "name": TOOL,
            "arguments": "",
        }
        data = {"type": "response.output_item.added", "output_index": 1, "item": item}
        return [sse(data, "response.output_item.added")]

    def tool_args(self, call: Call) -> list[bytes]:
        pieces = ['{"text": "', *call.pieces, '"}']
        return [
            sse(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "output_index": 1,
                    "delta": p,
                },
                "response.function_call_arguments.delta",
            )
            for p in pieces
        ]

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        output: list[dict[str, Any]] = [
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        if call is not None:
            output.append(
                {
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": CALL_ID,
                    "name": TOOL,
                    "arguments": json.dumps(call.arguments),
                    "status": "completed",
                }
            )
        response = {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gpt-x",
            "output": output,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return [sse({"type": "response.completed", "response": response}, "response.completed")]

    def error_event(self, message: str) -> list[bytes]:
        error = {"type": "server_error", "code": "server_error", "message": message}
        failed = {
            "id": "resp_1",
            "object": "response",
            "status": "failed",
            "error": error,
            "output": [],
        }
        return [
            sse({"type": "error", "error": error}, "error"),
            sse({"type": "response.failed", "response": failed}, "response.failed"),
        ]


class Gemini(Wire):
    name, vendor = "gemini", "google"

    def _chunk(self, parts: list[Any], finish: str | None = None, **extra: Any) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return sse({"candidates": [candidate], "modelVersion": "gemini-x", **extra})

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        extra = {"padding": padding} if padding else {}
        return [self._chunk([{"text": piece}], **extra)]

    def tool_start(self) -> list[bytes]:
        return [self._chunk([{"functionCall": {"name": TOOL, "willContinue": True}}])]

    def tool_args(self, call: Call) -> list[bytes]:
        out = []
        for piece in call.pieces:
            partial = {"jsonPath": "$.text", "stringValue": piece, "willContinue": True}
            out.append(
                self._chunk([{"functionCall": {"partialArgs": [partial], "willContinue": True}}])
            )
        return out

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        parts = [{"functionCall": {}}] if call else []
        return [self._chunk(parts, "STOP", usageMetadata=usage)]

    def error_event(self, message: str) -> list[bytes]:
        return [sse({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}})]

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": kind}}


class Ollama(Wire):
    name, vendor = "ollama", "ollama"
    content_type = "application/x-ndjson"
    error_retryable = False  # Ollama's {"error": "..."} line carries no status or type

    def _line(self, message: dict[str, Any], **extra: Any) -> bytes:
        return ndjson(
            {
                "model": "llama-x",
                "created_at": "2024-07-22T20:33:28Z",
                "message": {"role": "assistant", **message},
                "done": False,
                **extra,
            }
        )

    def text(self, piece: str, padding: str = "") -> list[bytes]:
        extra = {"padding": padding} if padding else {}
        return [self._line({"content": piece}, **extra)]

    def tool_start(self) -> list[bytes]:
        return []  # Ollama sends a tool call whole, in one line

    def tool_args(self, call: Call) -> list[bytes]:
        calls = [{"function": {"name": TOOL, "arguments": call.arguments}}]
        return [self._line({"content": "", "tool_calls": calls})]

    def tail(self, text: str, call: Call | None) -> list[bytes]:
        return [
            ndjson(
                {
                    "model": "llama-x",
                    "message": {"role": "assistant", "content": ""},
                    "done_reason": "stop",
                    "done": True,
                    "prompt_eval_count": 10,
                    "eval_count": 5,
                }
            )
        ]

    def error_event(self, message: str) -> list[bytes]:
        return [ndjson({"error": message})]

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": message}

    def garbage(self) -> bytes:
        return b"{not json\n"

    def truncated(self) -> bytes:
        whole = self.text("lost")[0]
        return whole[: len(whole) // 2] + b"\n"


WIRES: dict[str, Wire] = {
    w.name: w for w in (Anthropic(), OpenAIChat(), OpenAIResponses(), Gemini(), Ollama())
}
