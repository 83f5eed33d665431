"""Cut tool calls and one stop per answer, per KIND, on every protocol (and every vendor row of the
Chat protocol), streamed and not: real sockets (``ReplayServer``), the public API.

Each wire answer below is written by hand from the provider's documentation
(``../shared/corpus/WIRE.md``), not produced by zett's own encoder, so a test cannot
agree with itself. Only the framing is a helper (``data: <json>`` lines, NDJSON
lines, a JSON body).

Kinds:

* ``limit_cuts_call`` -- the output limit struck while a call was being generated:
  MAX_OUTPUT (CONTEXT_FULL for a vendor's context value); the complete call beside it
  runs, the cut one (``delete_all``) does not and is answered with the cut-off error;
  ``stop.detail["cut_tool_calls"]`` names it. The cut call's arguments look whole.
* ``open_call_normal_label`` -- a call the wire left open under a label that is not a
  limit: INTERRUPTED (raw kept), no tool runs, the host hears which call was cut.
* ``tools_label_args_cut`` -- the label says tools over arguments that do not parse,
  and output tokens equal the requested maximum: MAX_OUTPUT with ``raw`` kept.
* plain stops (``end_turn``, ``max_output``, ``refusal``, ``no_candidates``) for
  the stream/body comparison of part 3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from handwritten_wire import (
    A_START,
    LOOKUP_RESULT,
    RAN,
    RECORDINGS,
    TOOLS,
    E,
    R,
    _protocol,
    _reset,  # noqa: F401 - the autouse fixture
    a_body,
    a_end,
    a_text,
    a_tool,
    body,
    c_body,
    c_call,
    c_chunk,
    c_fn,
    c_usage,
    data,
    follow_up,
    g,
    model,
    named,
    ndjson,
    o,
    r_call,
    r_item,
    r_message,
    r_response,
    r_terminal,
    r_text,
    sent_results,
)  # fmt: skip
from zett_agent import AgentRunConfig, Model, ModelRequest, StopReason, UserMessage, create_agent
from zett_agent.protocols._builder import apply_output_limit
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import CUT_OFF_ARGUMENTS
from zett_agent.vendors import VENDORS

# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Pair:
    """One answer written by hand in both forms (None: the form cannot say it)."""

    protocol: str
    kind: str
    stream: Callable[[], Reply] | None
    body: Callable[[], Reply] | None
    reason: StopReason
    raw: str | None
    ran: tuple[str, ...] = ()
    cut: tuple[str, ...] = ()
    max_tokens: int | None = None


def _pairs() -> list[Pair]:
    pairs = [
        # ---- Anthropic
        Pair("anthropic", "limit_cuts_call",
             lambda: named(A_START, *a_tool(0, "tu_1", "lookup", '{"query": "alpha"}'),
                           *a_tool(1, "tu_2", "delete_all", "{}", closed=False),
                           *a_end("max_tokens")),
             lambda: a_body([{"type": "tool_use", "id": "tu_1", "name": "lookup",
                              "input": {"query": "alpha"}},
                             {"type": "tool_use", "id": "tu_2", "name": "delete_all",
                              "input": {}}], "max_tokens"),
             R.MAX_OUTPUT, "max_tokens", ("lookup:alpha",), ("delete_all",)),
        Pair("anthropic", "context_cuts_call",
             lambda: named(A_START, *a_tool(0, "tu_1", "lookup", '{"query": "alpha"}'),
                           *a_tool(1, "tu_2", "delete_all", "{}", closed=False),
                           *a_end("model_context_window_exceeded")),
             lambda: a_body([{"type": "tool_use", "id": "tu_1", "name": "lookup",
                              "input": {"query": "alpha"}},
                             {"type": "tool_use", "id": "tu_2", "name": "delete_all",
                              "input": {}}], "model_context_window_exceeded"),
             R.CONTEXT_FULL, "model_context_window_exceeded", ("lookup:alpha",),
             ("delete_all",)),
        Pair("anthropic", "open_call_normal_label",
             lambda: named(A_START, *a_tool(0, "tu_1", "delete_all", "{}", closed=False),
                           *a_end("tool_use")),
             None,  # a body has no content_block_stop to leave out
             R.INTERRUPTED, "tool_use", (), ("delete_all",)),
        Pair("anthropic", "tools_label_args_cut",
             lambda: named(A_START, *a_tool(0, "tu_1", "write_file", '{"path": "todo.md", "con'),
                           *a_end("tool_use", output_tokens=24)),
             None,  # a body's tool_use input is always a whole object
             R.MAX_OUTPUT, "tool_use", (), ("write_file",), max_tokens=24),
        Pair("anthropic", "end_turn",
             lambda: named(A_START, *a_text("Hi."), *a_end("end_turn")),
             lambda: a_body([{"type": "text", "text": "Hi."}], "end_turn"),
             R.END_TURN, "end_turn"),
        Pair("anthropic", "max_output",
             lambda: named(A_START, *a_text("Hi, th"), *a_end("max_tokens")),
             lambda: a_body([{"type": "text", "text": "Hi, th"}], "max_tokens"),
             R.MAX_OUTPUT, "max_tokens"),
        Pair("anthropic", "refusal",
             lambda: named(A_START, *a_end("refusal", stop_details={
                 "type": "refusal", "category": "cyber", "explanation": "No."})),
             lambda: a_body([], "refusal", stop_details={
                 "type": "refusal", "category": "cyber", "explanation": "No."}),
             R.REFUSAL, "refusal"),
        # ---- OpenAI Responses
        Pair("openai-responses", "limit_cuts_call",
             lambda: named(
                 *r_call(0, r_item("fc_1", "call_1", "lookup", '{"query": "alpha"}',
                                   "completed"), done=True),
                 *r_call(1, r_item("fc_2", "call_2", "delete_all", "{}", "incomplete"),
                         done=False),
                 r_terminal("incomplete", r_response(
                     "incomplete", [], incomplete_details={"reason": "max_output_tokens"}))),
             lambda: body(r_response("incomplete", [
                 r_item("fc_1", "call_1", "lookup", '{"query": "alpha"}', "completed"),
                 r_item("fc_2", "call_2", "delete_all", "{}", "incomplete")],
                 incomplete_details={"reason": "max_output_tokens"})),
             R.MAX_OUTPUT, "max_output_tokens", ("lookup:alpha",), ("delete_all",)),
        Pair("openai-responses", "open_call_normal_label",
             lambda: named(
                 *r_call(0, r_item("fc_1", "call_1", "delete_all", "{}", "in_progress"),
                         done=False),
                 r_terminal("completed", r_response("completed", [
                     r_item("fc_1", "call_1", "delete_all", "{}", "in_progress")]))),
             lambda: body(r_response("completed", [
                 r_item("fc_1", "call_1", "delete_all", "{}", "in_progress")])),
             R.INTERRUPTED, "completed", (), ("delete_all",)),
        Pair("openai-responses", "final_object_closes_call",  # no output_item.done
             lambda: named(
                 *r_call(0, r_item("fc_1", "call_1", "lookup", '{"query": "alpha"}',
                                   "completed"), done=False),
                 r_terminal("completed", r_response("completed", [
                     r_item("fc_1", "call_1", "lookup", '{"query": "alpha"}', "completed")]))),
             lambda: body(r_response("completed", [
                 r_item("fc_1", "call_1", "lookup", '{"query": "alpha"}', "completed")])),
             R.TOOL_USE, "completed", ("lookup:alpha",)),
        Pair("openai-responses", "tools_label_args_cut",
             lambda: named(
                 *r_call(0, r_item("fc_1", "call_1", "write_file", '{"path": "todo.md", "con',
                                   "completed"), done=True),
                 r_terminal("completed", r_response("completed", [
                     r_item("fc_1", "call_1", "write_file", '{"path": "todo.md", "con',
                            "completed")], output_tokens=24))),
             lambda: body(r_response("completed", [
                 r_item("fc_1", "call_1", "write_file", '{"path": "todo.md", "con',
                        "completed")], output_tokens=24)),
             R.MAX_OUTPUT, "completed", (), ("write_file",), max_tokens=24),
        Pair("openai-responses", "end_turn",
             lambda: named(*r_text("Hi."), r_terminal("completed", r_response(
                 "completed", [r_message("Hi.")]))),
             lambda: body(r_response("completed", [r_message("Hi.")])),
             R.END_TURN, "completed"),
        Pair("openai-responses", "refusal",
             lambda: named(*r_text("Hi"), r_terminal("incomplete", r_response(
                 "incomplete", [r_message("Hi")],
                 incomplete_details={"reason": "content_filter"}))),
             lambda: body(r_response("incomplete", [r_message("Hi")],
                                     incomplete_details={"reason": "content_filter"})),
             R.REFUSAL, "content_filter"),
        # ---- Ollama: calls come whole and parsed, so a call it sends is complete
        Pair("ollama", "limit_whole_calls_run",
             lambda: ndjson(
                 o({"content": "", "tool_calls": [
                     {"function": {"name": "lookup", "arguments": {"query": "alpha"}}}]}),
                 o({"content": ""}, done=True, reason="length")),
             lambda: body(o({"content": "", "tool_calls": [
                 {"function": {"name": "lookup", "arguments": {"query": "alpha"}}}]},
                 done=True, reason="length")),
             R.MAX_OUTPUT, "length", ("lookup:alpha",)),
        Pair("ollama", "end_turn",
             lambda: ndjson(o({"content": "Hi."}), o({"content": ""}, done=True, reason="stop")),
             lambda: body(o({"content": "Hi."}, done=True, reason="stop")),
             R.END_TURN, "stop"),
        Pair("ollama", "max_output",
             lambda: ndjson(o({"content": "Hi, th"}),
                            o({"content": ""}, done=True, reason="length")),
             lambda: body(o({"content": "Hi, th"}, done=True, reason="length")),
             R.MAX_OUTPUT, "length"),
    ]  # fmt: skip
    for vendor in ("google", "vertex", "vertex-express"):
        pairs += [
            Pair(vendor, "limit_cuts_call",
                 lambda: data(
                     g([{"functionCall": {"name": "lookup", "args": {"query": "alpha"}}}]),
                     g([{"functionCall": {"name": "delete_all", "willContinue": True}}]),
                     g([], "MAX_TOKENS")),
                 None,  # a body holds whole calls only (see limit_whole_calls_run)
                 R.MAX_OUTPUT, "MAX_TOKENS", ("lookup:alpha",), ("delete_all",)),
            Pair(vendor, "other_finish_leaves_call_open",
                 lambda: data(
                     g([{"functionCall": {"name": "lookup", "args": {"query": "alpha"}}}]),
                     g([{"functionCall": {"name": "delete_all", "willContinue": True}}]),
                     g([], "MALFORMED_FUNCTION_CALL")),
                 None,
                 R.OTHER, "MALFORMED_FUNCTION_CALL", ("lookup:alpha",), ("delete_all",)),
            Pair(vendor, "stop_without_terminator_is_complete",
                 lambda: data(
                     g([{"functionCall": {"name": "lookup", "willContinue": True}}]),
                     g([{"functionCall": {"partialArgs": [
                         {"jsonPath": "$.query", "stringValue": "alpha", "willContinue": True}],
                         "willContinue": True}}]),
                     g([{"text": ""}], "STOP")),
                 None,
                 R.TOOL_USE, "STOP", ("lookup:alpha",)),
            Pair(vendor, "limit_whole_calls_run",
                 lambda: data(
                     g([{"functionCall": {"name": "lookup", "args": {"query": "alpha"}}}]),
                     g([], "MAX_TOKENS")),
                 lambda: body(g([{"functionCall": {"name": "lookup",
                                                   "args": {"query": "alpha"}}}], "MAX_TOKENS")),
                 R.MAX_OUTPUT, "MAX_TOKENS", ("lookup:alpha",)),
            Pair(vendor, "end_turn",
                 lambda: data(g([{"text": "Hi"}]), g([{"text": "."}], "STOP")),
                 lambda: body(g([{"text": "Hi."}], "STOP")),
                 R.END_TURN, "STOP"),
            Pair(vendor, "refusal",
                 lambda: data(g([{"text": "Hi"}]), g([], "SAFETY")),
                 lambda: body(g([{"text": "Hi"}], "SAFETY")),
                 R.REFUSAL, "SAFETY"),
            Pair(vendor, "no_candidates",
                 lambda: data({"candidates": [], "modelVersion": "m",
                               "usageMetadata": {"promptTokenCount": 9}}),
                 lambda: body({"modelVersion": "m", "usageMetadata": {"promptTokenCount": 9}}),
                 R.INTERRUPTED, None),
        ]  # fmt: skip
    chat = sorted(n for n, v in VENDORS.items() if v.protocol == "openai-chat")
    for vendor in chat:
        pairs += [
            Pair(vendor, "limit_cuts_call",
                 lambda: data(
                     c_call(0, "call_1", "lookup", ""), c_call(0, None, None, '{"query": "alpha"}'),
                     c_call(1, "call_2", "delete_all", "{}"),
                     c_chunk({}, "length"), c_usage(10), "[DONE]"),
                 lambda: c_body({"content": None, "tool_calls": [
                     c_fn("call_1", "lookup", '{"query": "alpha"}'),
                     c_fn("call_2", "delete_all", "{}")]}, "length"),
                 R.MAX_OUTPUT, "length", ("lookup:alpha",), ("delete_all",)),
            Pair(vendor, "tools_label_args_cut",
                 lambda: data(
                     c_call(0, "call_1", "write_file", ""),
                     c_call(0, None, None, '{"path": "todo.md", "content": "- buy'),
                     c_chunk({}, "tool_calls"), c_usage(24), "[DONE]"),
                 lambda: c_body({"content": None, "tool_calls": [
                     c_fn("call_1", "write_file", '{"path": "todo.md", "content": "- buy')]},
                     "tool_calls", completion_tokens=24),
                 R.MAX_OUTPUT, "tool_calls", (), ("write_file",), max_tokens=24),
            Pair(vendor, "end_turn",
                 lambda: data(c_chunk({"role": "assistant", "content": "Hi"}),
                              c_chunk({"content": "."}), c_chunk({}, "stop"), "[DONE]"),
                 lambda: c_body({"content": "Hi."}, "stop"),
                 R.END_TURN, "stop"),
            Pair(vendor, "max_output",
                 lambda: data(c_chunk({"content": "Hi, th"}), c_chunk({}, "length"), "[DONE]"),
                 lambda: c_body({"content": "Hi, th"}, "length"),
                 R.MAX_OUTPUT, "length"),
            Pair(vendor, "refusal",
                 lambda: data(c_chunk({"content": "Hi"}), c_chunk({}, "content_filter"),
                              "[DONE]"),
                 lambda: c_body({"content": "Hi"}, "content_filter"),
                 R.REFUSAL, "content_filter"),
        ]  # fmt: skip
        pairs.append(  # OpenAI-compatible endpoints in front of guard models
            Pair(vendor, "guardrail_intervened",
                 lambda: data(c_chunk({"content": "I can"}),
                              c_call(0, "call_1", "delete_all", "{}"),
                              c_chunk({}, "guardrail_intervened"), "[DONE]"),
                 lambda: c_body({"content": "I can", "tool_calls": [
                     c_fn("call_1", "delete_all", "{}")]}, "guardrail_intervened"),
                 R.REFUSAL, "guardrail_intervened")
        )  # fmt: skip
        pairs.append(
            Pair(vendor, "no_choices",
                 lambda: data(c_usage(0), "[DONE]"),
                 lambda: body({"id": "c1", "object": "chat.completion", "model": "m",
                               "choices": [], "usage": {"prompt_tokens": 9,
                                                        "completion_tokens": 0}}),
                 R.INTERRUPTED, None)
        )  # fmt: skip
    # the vendors' own context values: the same rule under CONTEXT_FULL
    for vendor, value in (("mistral", "model_length"), ("glm", "model_context_window_exceeded")):
        pairs.append(
            Pair(vendor, "context_cuts_call",
                 lambda value=value: data(
                     c_call(0, "call_1", "lookup", '{"query": "alpha"}'),
                     c_call(1, "call_2", "delete_all", "{}"), c_chunk({}, value), "[DONE]"),
                 lambda value=value: c_body({"content": None, "tool_calls": [
                     c_fn("call_1", "lookup", '{"query": "alpha"}'),
                     c_fn("call_2", "delete_all", "{}")]}, value),
                 R.CONTEXT_FULL, value, ("lookup:alpha",), ("delete_all",))
        )  # fmt: skip
    return pairs


PAIRS = _pairs()
CALL_KINDS = {
    "guardrail_intervened",
    "limit_cuts_call",
    "context_cuts_call",
    "open_call_normal_label",
    "tools_label_args_cut",
    "other_finish_leaves_call_open",
    "stop_without_terminator_is_complete",
    "limit_whole_calls_run",
    "final_object_closes_call",
}


def _forms(kinds: set[str] | None = None) -> list[Any]:
    return [
        pytest.param(p, form, id=f"{p.protocol}-{p.kind}-{form}")
        for p in PAIRS
        for form in ("stream", "body")
        if getattr(p, form) is not None and (kinds is None or p.kind in kinds)
    ]


# ---------------------------------------------------------------- part 1: the agent


@pytest.mark.parametrize(("pair", "form"), _forms(CALL_KINDS))
async def test_tool_call_kind_through_the_agent(pair: Pair, form: str) -> None:
    stream = form == "stream"
    reply = pair.stream if stream else pair.body
    assert reply is not None
    with ReplayServer([reply(), follow_up(pair.protocol, stream)]) as server:
        agent = await create_agent(
            model(pair.protocol, server, stream),
            AgentRunConfig("kinds", max_tokens=pair.max_tokens),
            tools=TOOLS,
        )
        events = [e async for e in agent.stream("go")]
        await agent.aclose()
    first = next(e.message for e in events if e.type is E.MODEL_COMPLETED)
    info = first.stop
    assert list(pair.ran) == RAN  # an open call never runs; complete calls beside it do
    reason = info.reason if info is not None else R.TOOL_USE
    assert reason is pair.reason
    if info is not None:
        assert info.raw == pair.raw  # the provider's own value is kept
        assert list(info.detail.get("cut_tool_calls", [])) == list(pair.cut)
    else:
        assert pair.cut == ()
    if pair.reason is R.REFUSAL:  # a refusal withholds every call
        assert info is not None and info.detail["withheld_tool_calls"] == ["delete_all"]
        assert first.tool_calls == () and len(server.requests) == 1
        return
    if pair.reason is R.INTERRUPTED:  # a broken answer: nothing runs, the run ends
        assert info is not None and "delete_all" in info.detail["withheld_tool_calls"]
        assert first.tool_calls == () and len(server.requests) == 1
        assert [e.stop.reason for e in events if e.type is E.MODEL_STOPPED] == [R.INTERRUPTED]
        return
    results = sent_results(pair.protocol, server.requests[1].json)
    assert results.count(CUT_OFF_ARGUMENTS) == len(pair.cut)  # the cut-off error result
    assert results.count(LOOKUP_RESULT) == pair.ran.count("lookup:alpha")
    assert len(results) == len(pair.cut) + len(pair.ran)
    assert [(c.name, c.closed) for c in first.tool_calls if not c.closed] == [
        (name, False) for name in pair.cut
    ]


@pytest.mark.parametrize(("pair", "form"), _forms({"tools_label_args_cut"}))
async def test_tools_label_over_unparseable_args_below_the_limit_stays_tool_use(
    pair: Pair, form: str
) -> None:
    """The same answer with a higher requested maximum: the label stands (TOOL_USE),
    and the call, whose arguments do not parse, is still not run (an error result)."""
    stream = form == "stream"
    reply = pair.stream if stream else pair.body
    assert reply is not None and pair.max_tokens is not None
    with ReplayServer([reply(), follow_up(pair.protocol, stream)]) as server:
        agent = await create_agent(
            model(pair.protocol, server, stream),
            AgentRunConfig("kinds", max_tokens=pair.max_tokens + 100),
            tools=TOOLS,
        )
        first = None
        async for event in agent.stream("go"):
            if event.type is E.MODEL_COMPLETED and first is None:
                first = event.message
        await agent.aclose()
    assert first is not None and first.stop is None
    assert RAN == []
    (result,) = sent_results(pair.protocol, server.requests[1].json)
    assert "not valid JSON" in result


# ---------------------------------------------------------------- part 3: one answer


def _both_forms() -> list[Any]:
    return [
        pytest.param(p, id=f"{p.protocol}-{p.kind}")
        for p in PAIRS
        if p.stream is not None and p.body is not None
    ]


async def _complete(pair: Pair, stream: bool) -> tuple[Any, int]:
    reply = pair.stream if stream else pair.body
    assert reply is not None
    with ReplayServer([reply(), reply(), reply()]) as server:
        client = Model(pair.protocol, "m", base_url=server.url, api_key="k", stream=stream)
        request = ModelRequest("m", [UserMessage("go")], max_tokens=pair.max_tokens)
        response = apply_output_limit(await client.complete(request), pair.max_tokens)
        await client.aclose()
    return response, len(server.requests)


@pytest.mark.parametrize("pair", _both_forms())
async def test_one_answer_one_stop_streamed_or_not(pair: Pair) -> None:
    """The same answer, written by hand as a stream and as a body, gives the same
    reason, raw, category and cut calls, and each is asked for once."""
    streamed, s_requests = await _complete(pair, stream=True)
    whole, b_requests = await _complete(pair, stream=False)

    def outcome(response: Any) -> tuple[Any, ...]:
        info = response.stop_info
        return (
            info.reason,
            info.raw,
            info.category,
            tuple(info.detail.get("cut_tool_calls", ())),
            tuple((c.name, c.closed) for c in response.tool_calls),
        )

    assert outcome(streamed) == outcome(whole)
    assert (streamed.stop_info.reason, streamed.stop_info.raw) == (pair.reason, pair.raw)
    assert s_requests == b_requests == 1


@pytest.mark.parametrize(
    ("stream_file", "body_file"),
    [
        ("openai_chat__stream_length_truncated_json.sse",
         "openai_chat__length_truncated_structured_output.json"),
        ("anthropic__stream_pause_turn_message_delta.sse", "anthropic__pause_turn_web_search.json"),
    ],
)  # fmt: skip
async def test_recordings_in_both_forms_give_one_stop(stream_file: str, body_file: str) -> None:
    """Every recording that exists in both forms (the same request recorded streamed
    and not): equal reason, raw and category."""
    vendor = "openai" if stream_file.startswith("openai") else "anthropic"
    results = []
    for name, stream in ((stream_file, True), (body_file, False)):
        with ReplayServer([Reply.file(RECORDINGS / name)]) as server:
            client = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
            response = await client.complete(ModelRequest("m", [UserMessage("go")]))
            await client.aclose()
        info = response.stop_info
        results.append((info.reason, info.raw, info.category, len(response.tool_calls)))
    assert results[0] == results[1]


def test_every_protocol_and_chat_vendor_row_is_covered() -> None:
    covered = {p.protocol for p in PAIRS}
    assert covered == set(VENDORS)  # every vendor row
    for protocol in ("anthropic", "openai-responses", "gemini", "openai-chat"):
        kinds = {p.kind for p in PAIRS if _protocol(p.protocol) == protocol}
        assert "limit_cuts_call" in kinds or "context_cuts_call" in kinds


# ---------------------------------------------------------------- part 5


@pytest.mark.parametrize(
    ("vendor", "status", "error", "raw", "category"),
    [
        # a list of reasons and an int code: raw is the provider's error.code
        ("openrouter", 403, {"code": 403, "message": "flagged",
                             "metadata": {"reasons": ["violence", "hate", "violence"]}},
         "403", "violence, hate"),
        ("openrouter", 403, {"message": "blocked", "metadata": {"patterns": ["p1", "p2"]}},
         None, "p1, p2"),  # no code, no type: None, never "guardrail" or "http_403"
        ("kimi", 400, {"code": 400, "type": "content_filter", "message": "risky"},
         "content_filter", "content_filter"),
        ("deepseek", 400, {"message": "Content Exists Risk", "type": "invalid_request_error"},
         "invalid_request_error", "Content Exists Risk"),
    ],
)  # fmt: skip
async def test_refusal_sent_as_http_error_keeps_the_providers_own_raw(
    vendor: str, status: int, error: dict[str, Any], raw: str | None, category: str
) -> None:
    reply = Reply.json({"error": error}, status=status)
    with ReplayServer([reply]) as server:
        client = Model(vendor, "m", base_url=server.url, api_key="k")
        response = await client.complete(ModelRequest("m", [UserMessage("go")]))
        await client.aclose()
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, raw, category)
    assert info.detail["http_status"] == status


# ---------------------------------------------------------------- the Vertex recording

VERTEX_NO_TERMINATOR = RECORDINGS / "vertex__stream_partialArgs_missing_terminal_functionCall.sse"
WROTE: list[list[dict[str, Any]]] = []


def writeItems(operations: list[dict[str, Any]]) -> str:  # noqa: N802 - the recorded name
    """Write items."""
    WROTE.append(operations)
    return "written"


@pytest.mark.parametrize("finish", ["STOP", "MAX_TOKENS"])
async def test_vertex_recording_without_terminator(finish: str) -> None:
    """The recorded Vertex stream leaves out the empty ``functionCall{}`` terminator:
    under STOP the call is complete and runs once with its joined arguments. The same
    stream cut by MAX_TOKENS while its last fragment still said ``willContinue`` (the
    recording, edited by hand) never runs."""
    WROTE.clear()
    data = VERTEX_NO_TERMINATOR.read_bytes()
    if finish == "MAX_TOKENS":
        data = data.replace(b'"numberValue":0.3}]}', b'"numberValue":0.3}],"willContinue":true}')
        data = data.replace(b'"finishReason":"STOP"', b'"finishReason":"MAX_TOKENS"')
    reply = Reply.body(data, content_type="text/event-stream")
    with ReplayServer([reply, follow_up("vertex", True)]) as server:
        agent = await create_agent(model("vertex", server, True), tools=[writeItems])
        events = [e async for e in agent.stream("go")]
        await agent.aclose()
    first = next(e.message for e in events if e.type is E.MODEL_COMPLETED)
    (result,) = sent_results("vertex", server.requests[1].json)
    if finish == "STOP":
        assert first.stop is None and [c.closed for c in first.tool_calls] == [True]
        assert WROTE == [
            [
                {"action": "add", "description": "Fresh red apple", "itemid": "apple_001",
                 "price": 0.5},
                {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001",
                 "price": 0.3},
            ]
        ]  # fmt: skip
        assert result == "written"
    else:
        assert first.stop is not None and first.stop.reason is R.MAX_OUTPUT
        assert first.stop.detail["cut_tool_calls"] == ["writeItems"]
        assert WROTE == [] and result == CUT_OFF_ARGUMENTS
