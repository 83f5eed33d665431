"""Answers written by hand from each provider's documentation
(``../shared/corpus/WIRE.md``), for tests that must not agree with zett's own
encoder: the framing (``data: <json>`` lines, named SSE events, NDJSON lines, a
JSON body), one builder per protocol piece (``a_*`` Anthropic, ``c_*`` OpenAI
Chat, ``r_*`` Responses, ``g`` Gemini, ``o`` Ollama), the tools the answers call,
and the plain follow-up answer of each protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zett_agent import AgentEventType, Model, StopReason
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import VENDORS

RECORDINGS = Path(__file__).parent / "recordings"
R = StopReason
E = AgentEventType
RAN: list[str] = []
LOOKUP_RESULT = "alpha is the first letter"


def delete_all() -> str:
    """Delete everything."""
    RAN.append("delete_all")
    return "deleted everything"


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(f"lookup:{query}")
    return LOOKUP_RESULT


def write_file(path: str, content: str) -> str:
    """Write a file."""
    RAN.append("write_file")
    return "written"


TOOLS = [delete_all, lookup, write_file]


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


# ---------------------------------------------------------------- framing only


def data(*events: Any) -> Reply:
    """``data: <json>`` events (Chat, Gemini); a str is sent as is (``[DONE]``)."""
    return Reply.sse((None, e) for e in events)


def named(*events: dict[str, Any]) -> Reply:
    """SSE events named by their ``type`` (Anthropic, Responses)."""
    return Reply.sse((e["type"], e) for e in events)


def ndjson(*objects: dict[str, Any]) -> Reply:
    return Reply(
        [json.dumps(o).encode() + b"\n" for o in objects], content_type="application/x-ndjson"
    )


def body(obj: dict[str, Any]) -> Reply:
    return Reply.json(obj)


# ---------------------------------------------------------------- hand-written answers
# Anthropic Messages (WIRE.md section 1): blocks keyed by index, tool_use input as
# input_json_delta fragments, the block closed by content_block_stop.

A_START = {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 9}}}


def a_tool(index: int, call_id: str, name: str, partial: str, *, closed: bool = True) -> list[Any]:
    events: list[Any] = [
        {"type": "content_block_start", "index": index,
         "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": index,
         "delta": {"type": "input_json_delta", "partial_json": partial}},
    ]  # fmt: skip
    return events + ([{"type": "content_block_stop", "index": index}] if closed else [])


def a_end(stop_reason: str, output_tokens: int = 10, **delta: Any) -> list[Any]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, **delta},
         "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]  # fmt: skip


def a_text(text: str) -> list[Any]:
    return [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
    ]


def a_body(content: list[Any], stop_reason: str, output_tokens: int = 10, **extra: Any) -> Reply:
    return body(
        {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
         "content": content, "stop_reason": stop_reason, "stop_sequence": None,
         "usage": {"input_tokens": 9, "output_tokens": output_tokens}, **extra}
    )  # fmt: skip


# OpenAI Chat (WIRE.md section 2): tool calls as index fragments; the finish_reason in
# its own chunk; usage in a chunk with choices [].


def c_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def c_call(index: int, call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        call.update(id=call_id, type="function")
    return c_chunk({"tool_calls": [call]})


def c_usage(completion_tokens: int) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "model": "m", "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": completion_tokens,
                      "total_tokens": 9 + completion_tokens}}  # fmt: skip


def c_body(message: dict[str, Any], finish: str, completion_tokens: int = 10) -> Reply:
    return body(
        {"id": "c1", "object": "chat.completion", "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", **message},
                      "finish_reason": finish}],
         "usage": {"prompt_tokens": 9, "completion_tokens": completion_tokens,
                   "total_tokens": 9 + completion_tokens}}
    )  # fmt: skip


def c_fn(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# OpenAI Responses (WIRE.md section 3): function_call output items keyed by item id;
# output_item.done carries the item with its status; one terminal event.


def r_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": status}  # fmt: skip


def r_call(index: int, item: dict[str, Any], *, done: bool) -> list[Any]:
    added = {**item, "arguments": "", "status": "in_progress"}
    events: list[Any] = [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        {"type": "response.function_call_arguments.delta", "item_id": item["id"],
         "output_index": index, "delta": item["arguments"]},
    ]  # fmt: skip
    if done:
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def r_response(
    status: str, output: list[Any], output_tokens: int = 10, **extra: Any
) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "model": "m", "status": status,
            "output": output, "usage": {"input_tokens": 9, "output_tokens": output_tokens},
            **extra}  # fmt: skip


def r_terminal(kind: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"type": f"response.{kind}", "response": response}


def r_text(text: str) -> list[Any]:
    return [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "delta": text},
    ]  # fmt: skip


def r_message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text}]}  # fmt: skip


# Gemini / Vertex (WIRE.md section 4): candidates[0].content.parts; Vertex streams
# call arguments as partialArgs with willContinue; the finishReason on the last chunk.


def g(parts: list[Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 9, "candidatesTokenCount": 10}
    return {"candidates": [candidate], "modelVersion": "m", "usageMetadata": usage, **extra}


# Ollama (WIRE.md section 13): NDJSON; calls whole, arguments an object; done_reason.


def o(message: dict[str, Any], done: bool = False, reason: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"model": "m", "message": {"role": "assistant", **message}, "done": done}
    if done:
        obj.update(done_reason=reason, prompt_eval_count=9, eval_count=10)
    return obj


def _protocol(vendor: str) -> str:
    return VENDORS[vendor].protocol


# ---------------------------------------------------------------- follow-up answers


def follow_up(vendor: str, stream: bool) -> Reply:
    """A plain "ok" answer in the vendor's protocol (the turn after tool results)."""
    match _protocol(vendor):
        case "anthropic":
            if stream:
                return named(A_START, *a_text("ok"), *a_end("end_turn"))
            return a_body([{"type": "text", "text": "ok"}], "end_turn")
        case "openai-responses":
            if stream:
                return named(*r_text("ok"), r_terminal("completed", r_response(
                    "completed", [r_message("ok")])))  # fmt: skip
            return body(r_response("completed", [r_message("ok")]))
        case "gemini":
            return (
                data(g([{"text": "ok"}], "STOP")) if stream else body(g([{"text": "ok"}], "STOP"))
            )
        case "ollama":
            final = o({"content": "ok"}, done=True, reason="stop")
            return ndjson(final) if stream else body(final)
        case _:
            if stream:
                return data(c_chunk({"content": "ok"}), c_chunk({}, "stop"), "[DONE]")
            return c_body({"content": "ok"}, "stop")


def sent_results(vendor: str, request: dict[str, Any]) -> list[str]:
    """The tool results a request carried, in order (their content)."""
    match _protocol(vendor):
        case "anthropic":
            return [
                b["content"]
                for m in request["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_result"
            ]
        case "openai-responses":
            return [
                i["output"] for i in request["input"] if i.get("type") == "function_call_output"
            ]
        case "gemini":
            return [
                next(iter(p["functionResponse"]["response"].values()))
                for c in request["contents"]
                for p in c["parts"]
                if "functionResponse" in p
            ]
        case _:
            return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def model(vendor: str, server: ReplayServer, stream: bool) -> Model:
    return Model(vendor, "m", base_url=server.url, api_key="k", stream=stream, max_retries=0)
