"""Writes the structured-output recordings of this folder (run it from the repository
root: ``python tests/recordings/structured/build.py``).

Each file is one provider answer to a request for a ``City`` (``name``, ``population``)
in the provider's structured mode, in the shapes each provider documents (the
sources are in ``tests/recordings/SOURCES.md``): the answer valid (``ok``), valid
JSON that fails the schema (``invalid``), cut by the output limit (``max_output``),
refused (``refusal``), stopped because the context window filled
(``context_full``, where the wire has such a stop) and interrupted after part of the
JSON (``interrupted``). Streams are ``.sse`` / ``.ndjson``, whole bodies ``.json``.
Tool mode (a forced ``final_result`` tool) has its own files (``*_tool_*``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))

from faults.wire import WIRES, ndjson, sse  # noqa: E402

OK = '{"name": "Paris", "population": 2102650}'
INVALID = '{"name": "Paris"}'
CUT = '{"name": "Par'
REFUSAL = "I'm sorry, but I can't help with that."


def pieces(text: str) -> list[str]:
    return [text[i : i + 7] for i in range(0, len(text), 7)]


# ---------------------------------------------------------------- Anthropic Messages
A = WIRES["anthropic"]


def anthropic_stream(text: str, stop: str, details: Any = None) -> bytes:
    chunks = [*A.head()]
    for p in pieces(text):
        chunks += A.text(p)
    chunks += A.close_text()
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None, "stop_details": details},
        "usage": {"output_tokens": 9},
    }
    chunks += [sse(delta, "message_delta"), sse({"type": "message_stop"}, "message_stop")]
    return b"".join(chunks)


def anthropic_body(text: str, stop: str, details: Any = None) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": details,
        "usage": {"input_tokens": 40, "output_tokens": 9},
    }


REFUSED = {"type": "refusal", "category": "cyber", "explanation": REFUSAL}


def anthropic() -> dict[str, bytes | dict[str, Any]]:
    error = A.error_event("Overloaded")
    interrupted = [*A.head(), *A.text(CUT), *error]
    return {
        "ok.sse": anthropic_stream(OK, "end_turn"),
        "ok.json": anthropic_body(OK, "end_turn"),
        "invalid.sse": anthropic_stream(INVALID, "end_turn"),
        "invalid.json": anthropic_body(INVALID, "end_turn"),
        "max_output.sse": anthropic_stream(CUT, "max_tokens"),
        "max_output.json": anthropic_body(CUT, "max_tokens"),
        "refusal.sse": anthropic_stream("", "refusal", REFUSED),
        "refusal.json": anthropic_body("", "refusal", REFUSED),
        "context_full.sse": anthropic_stream(CUT, "model_context_window_exceeded"),
        "context_full.json": anthropic_body(CUT, "model_context_window_exceeded"),
        "interrupted.sse": b"".join(interrupted),
    }


# ---------------------------------------------------------------- OpenAI Chat
C = WIRES["openai-chat"]


def chat_stream(text: str, finish: str, refusal: str = "") -> bytes:
    chunks = [C._chunk({"role": "assistant", "content": "", "refusal": None})]
    for p in pieces(text):
        chunks.append(C._chunk({"content": p}))
    for p in pieces(refusal):
        chunks.append(C._chunk({"refusal": p}))
    usage = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
    chunks += [C._chunk({}, finish), sse({**C._id, "choices": [], "usage": usage}), sse("[DONE]")]
    return b"".join(chunks)


def chat_body(text: str | None, finish: str, refusal: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "refusal": refusal}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-x",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
    }


def chat() -> dict[str, bytes | dict[str, Any]]:
    interrupted_body = chat_body(CUT, "error")
    interrupted_body["choices"][0]["error"] = {"code": 502, "message": "Upstream error"}
    return {
        "ok.sse": chat_stream(OK, "stop"),
        "ok.json": chat_body(OK, "stop"),
        "invalid.sse": chat_stream(INVALID, "stop"),
        "invalid.json": chat_body(INVALID, "stop"),
        "max_output.sse": chat_stream(CUT, "length"),
        "max_output.json": chat_body(CUT, "length"),
        "refusal.sse": chat_stream("", "stop", REFUSAL),
        "refusal.json": chat_body(None, "stop", REFUSAL),
        # GLM (Z.ai) on the Chat wire: finish_reason model_context_window_exceeded
        "context_full.sse": chat_stream(CUT, "model_context_window_exceeded"),
        "context_full.json": chat_body(CUT, "model_context_window_exceeded"),
        "interrupted.sse": b"".join([*C.head(), *C.text(CUT), *C.error_event("Upstream error")]),
        "interrupted.json": interrupted_body,
    }


# ---------------------------------------------------------------- OpenAI Responses
R = WIRES["openai-responses"]


def responses_output(text: str, refusal: str = "") -> list[dict[str, Any]]:
    part = (
        {"type": "refusal", "refusal": refusal}
        if refusal
        else {"type": "output_text", "text": text, "annotations": []}
    )
    return [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed" if not text or text == OK else "incomplete",
            "content": [part],
        }
    ]


def responses_object(text: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-x",
        "output": responses_output(text, extra.pop("refusal", "")),
        "usage": {"input_tokens": 40, "output_tokens": 9},
        **extra,
    }


def responses_stream(text: str, status: str, refusal: str = "", **extra: Any) -> bytes:
    chunks = [*R.head()]
    for p in pieces(text):
        chunks += R.text(p)
    for p in pieces(refusal):
        data = {"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0}
        chunks.append(sse({**data, "content_index": 0, "delta": p}, "response.refusal.delta"))
    final = responses_object(text, status, refusal=refusal, **extra)
    kind = {"completed": "response.completed", "incomplete": "response.incomplete"}[status]
    chunks.append(sse({"type": kind, "response": final}, kind))
    return b"".join(chunks)


def responses() -> dict[str, bytes | dict[str, Any]]:
    limit = {"incomplete_details": {"reason": "max_output_tokens"}}
    error = {"code": "server_error", "message": "The server had an error."}
    failed = responses_object(CUT, "failed", error=error)
    return {
        "ok.sse": responses_stream(OK, "completed"),
        "ok.json": responses_object(OK, "completed"),
        "invalid.sse": responses_stream(INVALID, "completed"),
        "invalid.json": responses_object(INVALID, "completed"),
        "max_output.sse": responses_stream(CUT, "incomplete", **limit),
        "max_output.json": responses_object(CUT, "incomplete", **limit),
        "refusal.sse": responses_stream("", "completed", REFUSAL),
        "refusal.json": responses_object("", "completed", refusal=REFUSAL),
        "interrupted.sse": b"".join([*R.head(), *R.text(CUT), *R.error_event(error["message"])]),
        "interrupted.json": failed,
        # no context-full stop on this wire: an input over the window is a 400
        "context_overflow_400.json": {
            "error": {
                "message": "Your input exceeds the context window of this model.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
    }


# ---------------------------------------------------------------- Gemini
G = WIRES["gemini"]
USAGE = {"promptTokenCount": 40, "candidatesTokenCount": 9, "totalTokenCount": 49}


def gemini_chunks(text: str, finish: str, **candidate: Any) -> list[dict[str, Any]]:
    out = []
    parts = pieces(text) or [""]
    for n, p in enumerate(parts):
        last = n == len(parts) - 1
        entry: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": p}] if p else []},
            "index": 0,
        }
        if last:
            entry.update(finishReason=finish, **candidate)
        chunk: dict[str, Any] = {"candidates": [entry], "modelVersion": "gemini-x"}
        if last:
            chunk["usageMetadata"] = USAGE
        out.append(chunk)
    return out


def gemini_body(text: str, finish: str, **candidate: Any) -> dict[str, Any]:
    entry = {
        "content": {"role": "model", "parts": [{"text": text}] if text else []},
        "finishReason": finish,
        "index": 0,
        **candidate,
    }
    return {"candidates": [entry], "usageMetadata": USAGE, "modelVersion": "gemini-x"}


def gemini() -> dict[str, bytes | dict[str, Any] | list[Any]]:
    safety = {
        "safetyRatings": [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ]
    }
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    partial = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": CUT}]}, "index": 0}],
        "modelVersion": "gemini-x",
    }
    return {
        "ok.sse": b"".join(sse(c) for c in gemini_chunks(OK, "STOP")),
        "ok.json": gemini_body(OK, "STOP"),
        "invalid.sse": b"".join(sse(c) for c in gemini_chunks(INVALID, "STOP")),
        "invalid.json": gemini_body(INVALID, "STOP"),
        "max_output.sse": b"".join(sse(c) for c in gemini_chunks(CUT, "MAX_TOKENS")),
        "max_output.json": gemini_body(CUT, "MAX_TOKENS"),
        "refusal.sse": b"".join(sse(c) for c in gemini_chunks("", "SAFETY", **safety)),
        "refusal.json": gemini_body("", "SAFETY", **safety),
        "interrupted.sse": sse(partial) + sse(error),
        # streamGenerateContent without alt=sse: a JSON array of the same chunks
        "interrupted.json": [partial, error],
        "context_overflow_400.json": {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
    }


# ---------------------------------------------------------------- Ollama


def ollama_lines(text: str, reason: str) -> list[dict[str, Any]]:
    lines = [
        {
            "model": "llama-x",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": p},
            "done": False,
        }
        for p in pieces(text)
    ]
    lines.append(
        {
            "model": "llama-x",
            "created_at": "2025-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
            "prompt_eval_count": 40,
            "eval_count": 9,
        }
    )
    return lines


def ollama_body(text: str, reason: str) -> dict[str, Any]:
    return {
        "model": "llama-x",
        "created_at": "2025-01-01T00:00:01Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": reason,
        "prompt_eval_count": 40,
        "eval_count": 9,
    }


def ollama() -> dict[str, bytes | dict[str, Any]]:
    cut = ollama_lines(CUT, "stop")[:-1]
    interrupted = b"".join(ndjson(x) for x in cut) + ndjson({"error": "model runner stopped"})
    return {
        "ok.ndjson": b"".join(ndjson(x) for x in ollama_lines(OK, "stop")),
        "ok.json": ollama_body(OK, "stop"),
        "invalid.ndjson": b"".join(ndjson(x) for x in ollama_lines(INVALID, "stop")),
        "invalid.json": ollama_body(INVALID, "stop"),
        "max_output.ndjson": b"".join(ndjson(x) for x in ollama_lines(CUT, "length")),
        "max_output.json": ollama_body(CUT, "length"),
        "interrupted.ndjson": interrupted,
        # a server that streams NDJSON to stream:false (a gateway): the same lines
        "interrupted.json": interrupted,
        "context_overflow_400.json": {"error": "the input length exceeds the context length"},
        # Ollama's own wire has no refusal: a gateway in front of it refusing with 403
        "refusal_403.json": {"error": "Content violates the usage policy (category: cyber)"},
    }


# ---------------------------------------------------------------- tool mode (Chat)


def chat_tool_stream(arguments: str, finish: str = "tool_calls") -> bytes:
    start = {
        "index": 0,
        "id": "call_out",
        "type": "function",
        "function": {"name": "final_result", "arguments": ""},
    }
    chunks = [C._chunk({"role": "assistant", "content": None}), C._chunk({"tool_calls": [start]})]
    for p in pieces(arguments):
        chunks.append(C._chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
    usage = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
    chunks += [C._chunk({}, finish), sse({**C._id, "choices": [], "usage": usage}), sse("[DONE]")]
    return b"".join(chunks)


def tool_mode() -> dict[str, bytes | dict[str, Any]]:
    return {
        "tool_ok.sse": chat_tool_stream(OK),
        "tool_invalid.sse": chat_tool_stream(INVALID),
        "tool_max_output.sse": chat_tool_stream(CUT, "length"),
    }


def main() -> None:
    builders = {
        "anthropic": anthropic,
        "openai_chat": chat,
        "openai_responses": responses,
        "gemini": gemini,
        "ollama": ollama,
        "deepseek": tool_mode,
    }
    for prefix, build in builders.items():
        for name, content in build().items():
            data = content if isinstance(content, bytes) else json.dumps(content, indent=1).encode()
            (HERE / f"{prefix}__structured_{name}").write_bytes(data)


if __name__ == "__main__":
    main()
