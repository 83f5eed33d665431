"""Each protocol's answer on the wire, as a stream and as a body.

A builder writes one answer from its parts: text, tool calls (name, arguments JSON
text, closed or cut by the wire), the provider's stop value, and an error that
ends a stream. ``generate_cases.py`` builds the synthesized cases with them; the
replay server answers every request after a case's first with
:func:`follow_up` (a plain finished answer), so a runtime that goes on after the
first step gets an ordinary end.

The shapes are the providers' documented ones (Anthropic Messages streaming,
OpenAI Chat Completions chunks, OpenAI Responses streaming events, Gemini
``streamGenerateContent?alt=sse``, Ollama ``/api/chat`` NDJSON).
"""

from __future__ import annotations

import json
from typing import Any


def _sse(events: list[tuple[str | None, Any]]) -> str:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out)


def anthropic(text: str, calls: list[tuple[str, str, bool]], stop: str | None, *,
              stream: bool, error: dict[str, Any] | None = None,
              stop_details: dict[str, Any] | None = None) -> str:  # fmt: skip
    if not stream:
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        for i, (name, args, closed) in enumerate(calls):
            # a body cut inside a call's input holds what was parsed of it: nothing
            content.append({"type": "tool_use", "id": f"toolu_{i}", "name": name,
                            "input": json.loads(args) if closed else {}})  # fmt: skip
        return json.dumps({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "stop_details": stop_details,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }, indent=1)  # fmt: skip
    ev: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]  # fmt: skip
    index = 0
    if text:
        ev.append(("content_block_start", {"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}))  # fmt: skip
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": text}}))  # fmt: skip
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for i, (name, args, closed) in enumerate(calls):
        ev.append(("content_block_start", {"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": name,
                                     "input": {}}}))  # fmt: skip
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": args}}))  # fmt: skip
        if closed:
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if error is not None:
        ev.append(("error", {"type": "error", "error": error}))
        return _sse(ev)
    delta: dict[str, Any] = {"stop_reason": stop, "stop_sequence": None}
    if stop_details is not None:
        delta["stop_details"] = stop_details
    ev.append(("message_delta", {"type": "message_delta", "delta": delta,
               "usage": {"output_tokens": 5}}))  # fmt: skip
    ev.append(("message_stop", {"type": "message_stop"}))
    return _sse(ev)


def openai_chat(text: str, calls: list[tuple[str, str, bool]], finish: str | None, *,
                stream: bool, error: dict[str, Any] | None = None,
                refusal: str | None = None) -> str:  # fmt: skip
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text or None,
                                   "refusal": refusal}  # fmt: skip
        if calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name, "arguments": args}}
                for i, (name, args, _closed) in enumerate(calls)
            ]  # fmt: skip
        return json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }, indent=1)  # fmt: skip

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}  # fmt: skip

    ev: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    if text:
        ev.append((None, chunk({"content": text})))
    if refusal:
        ev.append((None, chunk({"refusal": refusal})))
    for i, (name, args, _closed) in enumerate(calls):
        ev.append((None, chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                   "function": {"name": name, "arguments": ""}}]})))  # fmt: skip
        ev.append((None, chunk({"tool_calls": [{"index": i, "function": {"arguments": args}}]})))
    if error is not None:
        ev.append((None, {"error": error}))
        return _sse(ev)
    ev.append((None, chunk({}, finish)))
    ev.append((None, "[DONE]"))
    return _sse(ev)


def openai_responses(text: str, calls: list[tuple[str, str, bool]], status: str, *,
                     stream: bool, incomplete: str | None = None,
                     error: dict[str, Any] | None = None,
                     refusal: str | None = None) -> str:  # fmt: skip
    output: list[dict[str, Any]] = []
    if text or refusal:
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "output_text", "text": text, "annotations": []})
        if refusal:
            parts.append({"type": "refusal", "refusal": refusal})
        output.append({"type": "message", "id": "msg_1", "role": "assistant",
                       "status": "completed" if status == "completed" else "incomplete",
                       "content": parts})  # fmt: skip
    for i, (name, args, closed) in enumerate(calls):
        output.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}",
                       "name": name, "arguments": args,
                       "status": "completed" if closed else "incomplete"})  # fmt: skip
    response = {
        "id": "resp_1", "object": "response", "created_at": 1, "model": "test-model",
        "status": status, "output": output,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "error": error if status == "failed" else None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }  # fmt: skip
    if not stream:
        return json.dumps(response, indent=1)
    seq = iter(range(1000))
    ev: list[tuple[str | None, Any]] = []

    def add(kind: str, **data: Any) -> None:
        ev.append((kind, {"type": kind, "sequence_number": next(seq), **data}))

    add("response.created", response={**response, "status": "in_progress", "output": [],
                                      "incomplete_details": None, "error": None})  # fmt: skip
    for index, item in enumerate(output):
        if item["type"] == "message":
            add("response.output_item.added", output_index=index,
                item={**item, "content": [], "status": "in_progress"})  # fmt: skip
            for part_index, part in enumerate(item["content"]):
                if part["type"] == "output_text":
                    add("response.output_text.delta", item_id=item["id"], output_index=index,
                        content_index=part_index, delta=part["text"])  # fmt: skip
                else:
                    add("response.refusal.delta", item_id=item["id"], output_index=index,
                        content_index=part_index, delta=part["refusal"])  # fmt: skip
                    add("response.refusal.done", item_id=item["id"], output_index=index,
                        content_index=part_index, refusal=part["refusal"])  # fmt: skip
        else:
            add("response.output_item.added", output_index=index,
                item={**item, "arguments": "", "status": "in_progress"})  # fmt: skip
            add("response.function_call_arguments.delta", item_id=item["id"],
                output_index=index, delta=item["arguments"])  # fmt: skip
            if item["status"] == "completed":
                add("response.function_call_arguments.done", item_id=item["id"],
                    output_index=index, arguments=item["arguments"])  # fmt: skip
        if item["status"] == "completed":
            add("response.output_item.done", output_index=index, item=item)
    if error is not None and status != "failed":
        add("error", error=error)
        return _sse(ev)
    if error is not None:
        add("error", error=error)
    terminal = {"completed": "response.completed", "incomplete": "response.incomplete",
                "failed": "response.failed"}[status]  # fmt: skip
    add(terminal, response=response)
    return _sse(ev)


def gemini(text: str, calls: list[tuple[str, str, bool]], finish: str | None, *,
           stream: bool, error: dict[str, Any] | None = None,
           block: str | None = None) -> str:  # fmt: skip
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    for name, args, _closed in calls:
        parts.append({"functionCall": {"name": name, "args": json.loads(args)}})
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    if block is not None:
        body: dict[str, Any] = {"promptFeedback": {"blockReason": block},
                                "usageMetadata": usage, "modelVersion": "test-model"}  # fmt: skip
        return _sse([(None, body)]) if stream else json.dumps(body, indent=1)
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "test-model"}
    if not stream:
        return json.dumps(body, indent=1)
    ev: list[tuple[str | None, Any]] = []
    if error is not None:
        ev.append((None, {"candidates": [{"content": {"role": "model", "parts": parts},
                                          "index": 0}], "modelVersion": "test-model"}))  # fmt: skip
        ev.append((None, {"error": error}))
        return _sse(ev)
    if text:
        ev.append((None, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                          "index": 0}], "modelVersion": "test-model"}))  # fmt: skip
    rest = [p for p in parts if "text" not in p]
    last: dict[str, Any] = {"content": {"role": "model", "parts": rest or [{"text": ""}]},
                            "index": 0}  # fmt: skip
    if finish is not None:
        last["finishReason"] = finish
    ev.append((None, {"candidates": [last], "usageMetadata": usage, "modelVersion": "test-model"}))
    return _sse(ev)


def ollama(text: str, calls: list[tuple[str, str, bool]], done_reason: str | None, *,
           stream: bool, error: str | None = None) -> str:  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"function": {"name": name, "arguments": json.loads(args)}}
                                 for name, args, _closed in calls]  # fmt: skip
    final: dict[str, Any] = {"model": "test-model", "created_at": "2026-01-01T00:00:00Z",
                             "message": message, "done": True,
                             "prompt_eval_count": 10, "eval_count": 5}  # fmt: skip
    if done_reason is not None:
        final["done_reason"] = done_reason
    if not stream:
        return json.dumps(final, indent=1)
    lines = []
    if text:
        lines.append({"model": "test-model", "created_at": "2026-01-01T00:00:00Z",
                      "message": {"role": "assistant", "content": text},
                      "done": False})  # fmt: skip
    if error is not None:
        lines.append({"error": error})
    else:
        lines.append({**final, "message": {**message, "content": ""}})
    return "".join(json.dumps(line) + "\n" for line in lines)


BUILDERS = {"anthropic": anthropic, "openai-chat": openai_chat,
            "openai-responses": openai_responses, "gemini": gemini, "ollama": ollama}  # fmt: skip


def follow_up(protocol: str, *, stream: bool) -> tuple[str, str]:
    """A finished plain answer ("Done.") in ``protocol``: ``(content type, body)``."""
    finish = {"anthropic": "end_turn", "openai-chat": "stop", "openai-responses": "completed",
              "gemini": "STOP", "ollama": "stop"}[protocol]  # fmt: skip
    body = BUILDERS[protocol]("Done.", [], finish, stream=stream)
    if not stream:
        return "application/json", body
    return ("application/x-ndjson" if protocol == "ollama" else "text/event-stream"), body
