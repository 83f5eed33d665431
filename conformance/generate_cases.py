# ruff: noqa: E501  (the verdict table keeps one case per line)
"""Write the case files of the conformance suite into ``cases/``.

Run from the repository root: ``python conformance/generate_cases.py``. The case
files it writes are committed; this script is how they were made, kept so a case
can be regenerated or added the same way. It reads:

* ``tests/recordings/`` (the corpus of ``../shared/corpus``: real and documented
  provider bodies and streams, sources in ``tests/recordings/SOURCES.md``), one
  case per recording, with the verdict in ``CORPUS`` below;
* ``tests/cases/`` (the round's bug-case files), with the verdicts of their README;
* nothing else: the synthesized cases (the loop kinds on every protocol, stream and
  body) are built here from each protocol's documented wire shapes.

Every verdict comes from the provider's documented meaning of the value (the
``why`` of each case names the document), never from what a runtime outputs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
from zett_conformance._wire import BUILDERS

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "tests" / "recordings"
BUG_CASES = ROOT / "tests" / "cases"
OUT = Path(__file__).resolve().parent / "cases"

DOCS = {
    "anthropic": "https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons",
    "anthropic-errors": "https://docs.claude.com/en/api/errors",
    "anthropic-streaming": "https://docs.claude.com/en/docs/build-with-claude/streaming",
    "anthropic-refusals": "https://platform.claude.com/docs/en/test-and-evaluate/"
    "strengthen-guardrails/handle-streaming-refusals",
    "openai-chat": "https://platform.openai.com/docs/api-reference/chat/object",
    "openai-chat-stream": "https://platform.openai.com/docs/api-reference/chat-streaming",
    "openai-refusal": "https://platform.openai.com/docs/guides/structured-outputs#refusals",
    "openai-errors": "https://platform.openai.com/docs/guides/error-codes",
    "openai-responses": "https://platform.openai.com/docs/api-reference/responses/object",
    "openai-responses-stream": "https://platform.openai.com/docs/api-reference/responses-streaming",
    "gemini": "https://ai.google.dev/api/generate-content#FinishReason",
    "gemini-block": "https://ai.google.dev/api/generate-content#BlockReason",
    "gemini-errors": "https://ai.google.dev/gemini-api/docs/troubleshooting",
    "vertex": "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference",
    "ollama": "https://github.com/ollama/ollama/blob/main/docs/api.md",
    "deepseek": "https://api-docs.deepseek.com/api/create-chat-completion",
    "glm": "https://docs.bigmodel.cn/api-reference",
    "mistral": "https://docs.mistral.ai/api/#tag/chat",
    "openrouter": "https://openrouter.ai/docs/api-reference/errors-and-debugging",
    "openrouter-overview": "https://openrouter.ai/docs/api-reference/overview",
    "groq": "https://console.groq.com/docs/errors",
    "kimi": "https://platform.moonshot.ai/docs/api/chat",
    "qwen": "https://www.alibabacloud.com/help/en/model-studio/error-code",
    "xai": "https://docs.x.ai/docs/api-reference",
}

# vendor prefix of a recording -> (zett vendor row, protocol)
PREFIX = {
    "anthropic": ("anthropic", "anthropic"),
    "anthropic_openai_compat": ("openai", "openai-chat"),
    "deepseek": ("deepseek", "openai-chat"),
    "gemini": ("google", "gemini"),
    "vertex": ("google", "gemini"),
    "glm": ("glm", "openai-chat"),
    "groq": ("groq", "openai-chat"),
    "kimi": ("kimi", "openai-chat"),
    "mistral": ("mistral", "openai-chat"),
    "ollama": ("ollama", "ollama"),
    "openai_azure": ("openai", "openai-chat"),
    "openai_chat": ("openai", "openai-chat"),
    "openai_compat_gateway": ("openai", "openai-chat"),
    "openai_responses": ("openai-responses", "openai-responses"),
    "openrouter": ("openrouter", "openai-chat"),
    "qwen": ("qwen", "openai-chat"),
    "xai": ("xai", "openai-chat"),
}

# The corpus verdicts: file -> (stop, raw, tools that must not run, why, doc key).
# ``raw`` is the provider's own value a host needs to see (None: not checked).
# Tool calls named in a recording are offered as tools; the ones not listed in
# "must not run" of a tool_use answer are expected to be handed to the host.
# fmt: off
CORPUS: dict[str, tuple[str, str | None, list[str], str, str]] = {
    "anthropic__400_prompt_too_long.json": ("context_full", None, [], "input longer than the context window is HTTP 400 invalid_request_error 'prompt is too long'", "anthropic-errors"),
    "anthropic__fallback_content_block_iterations.json": ("end_turn", "end_turn", [], "stop_reason end_turn after a server-side fallback block", "anthropic"),
    "anthropic__pause_turn_web_search.json": ("paused", "pause_turn", [], "pause_turn: the server tool loop paused, send the content back to continue", "anthropic"),
    "anthropic__refusal_stop_details.json": ("refusal", "refusal", [], "stop_reason refusal with stop_details", "anthropic-refusals"),
    "anthropic__refusal_stop_details_null.json": ("refusal", "refusal", [], "stop_reason refusal; branch on stop_reason, stop_details may be null", "anthropic-refusals"),
    "anthropic__stream_event_error_overloaded.sse": ("interrupted", "overloaded_error", [], "an error event inside a 200 stream (overloaded_error), no message_stop", "anthropic-streaming"),
    "anthropic__stream_max_tokens_message_delta.sse": ("max_output", "max_tokens", [], "max_tokens: the output limit was reached", "anthropic"),
    "anthropic__stream_pause_turn_message_delta.sse": ("paused", "pause_turn", [], "pause_turn in message_delta", "anthropic"),
    "anthropic__stream_refusal_after_server_tool.sse": ("refusal", "refusal", [], "refusal after streamed text: the client must drop the turn", "anthropic-refusals"),
    "anthropic__stream_refusal_midstream_stop_details_fallback_token.sse": ("refusal", "refusal", [], "refusal after streamed text", "anthropic-refusals"),
    "anthropic__stream_refusal_stop_details_category.sse": ("refusal", "refusal", [], "refusal with stop_details category cyber", "anthropic-refusals"),
    "anthropic__stream_tool_use_input_json_delta.sse": ("tool_use", "tool_use", [], "tool_use: the model asks for the tool", "anthropic"),
    "anthropic_openai_compat__stream_tool_call_index_1.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "openai-chat"),
    "deepseek__400_content_exists_risk.json": ("refusal", None, [], "input moderation is HTTP 400 'Content Exists Risk'", "deepseek"),
    "deepseek__stream_reasoner_stop_usage.sse": ("end_turn", "stop", [], "finish_reason stop", "deepseek"),
    "deepseek__stream_tool_call_index_fragments.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "deepseek"),
    "gemini__429_RESOURCE_EXHAUSTED_retryinfo.json": ("interrupted", None, [], "429 RESOURCE_EXHAUSTED: no capacity or quota for the request", "gemini-errors"),
    "gemini__STOP_with_functionCall_finishMessage.json": ("tool_use", "STOP", [], "STOP with functionCall parts: Gemini has no tool finish reason", "gemini"),
    "gemini__finish_max_tokens.json": ("max_output", "MAX_TOKENS", [], "MAX_TOKENS: the maximum number of tokens was reached", "gemini"),
    "gemini__finish_max_tokens_empty_thinking.json": ("max_output", "MAX_TOKENS", [], "MAX_TOKENS with no parts (thinking used the budget)", "gemini"),
    "gemini__finish_safety_empty_content.json": ("refusal", "SAFETY", [], "SAFETY: the candidate was flagged for safety reasons", "gemini"),
    "gemini__stream_functionCall_and_STOP_same_chunk.sse": ("tool_use", "STOP", [], "functionCall and STOP in one chunk", "gemini"),
    "gemini__stream_functionCall_then_STOP_empty_text.sse": ("tool_use", "STOP", [], "functionCall, then STOP with empty text", "gemini"),
    "gemini__stream_text_usage_changes_between_chunks.sse": ("end_turn", "STOP", [], "STOP: natural stop point", "gemini"),
    "glm__400_code_1301_sensitive.json": ("refusal", None, [], "code 1301: the safety check found sensitive content", "glm"),
    "glm__anthropic_compat_200_model_context_window_exceeded.json": ("context_full", "model_context_window_exceeded", [], "model_context_window_exceeded: the context window filled", "anthropic"),
    "glm__stream_no_finish_key_until_last.sse": ("end_turn", "stop", [], "finish_reason stop on the last chunk", "glm"),
    "groq__400_tool_use_failed.json": ("interrupted", None, [], "HTTP 400 tool_use_failed: the provider failed the generation", "groq"),
    "groq__stream_event_error_tool_use_failed.sse": ("interrupted", "tool_use_failed", [], "an error event inside a 200 stream", "groq"),
    "groq__stream_tool_call_x_groq_usage.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "groq"),
    "kimi__400_content_filter_high_risk.json": ("refusal", None, [], "HTTP 400 type content_filter: the request was rejected as high risk", "kimi"),
    "kimi__403_access_terminated_error.json": ("interrupted", None, [], "HTTP 403 access_terminated_error: the provider ends the request (not a refusal of its content)", "kimi"),
    "mistral__stream_incremental_tool_call_glm.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "mistral"),
    "mistral__stream_thinking_stop_usage.sse": ("end_turn", "stop", [], "finish_reason stop", "mistral"),
    "mistral__stream_tool_call_whole_no_index.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "mistral"),
    "ollama__chat_done_reason_load.json": ("other", "load", [], "done_reason load: the model was loaded, no answer was generated", "ollama"),
    "ollama__chat_done_reason_unload.json": ("other", "unload", [], "done_reason unload: the model was unloaded, no answer was generated", "ollama"),
    "ollama__chat_tool_calls_done_reason_stop.json": ("tool_use", "stop", [], "tool_calls with done_reason stop (the native API never says tool_calls)", "ollama"),
    "ollama__generate_done_reason_length.json": ("max_output", "length", [], "done_reason length: num_predict reached", "ollama"),
    "openai_azure__400_content_filter_innererror.json": ("refusal", None, [], "HTTP 400 code content_filter: the prompt was filtered", "openai-errors"),
    "openai_chat__400_invalid_prompt_safety.json": ("refusal", None, [], "HTTP 400 invalid_prompt: the prompt was blocked by the safety system", "openai-errors"),
    "openai_chat__length_truncated_structured_output.json": ("max_output", "length", [], "finish_reason length: the maximum number of tokens was reached", "openai-chat"),
    "openai_chat__moderation_flagged_finish_stop.json": ("end_turn", "stop", [], "finish_reason stop, no refusal field: a natural stop", "openai-chat"),
    "openai_chat__refusal_field_structured_output.json": ("refusal", None, [], "message.refusal holds the model's refusal (finish_reason stays stop)", "openai-refusal"),
    "openai_chat__stream_length_truncated_json.sse": ("max_output", "length", [], "finish_reason length", "openai-chat-stream"),
    "openai_chat__stream_parallel_tool_calls_index.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "openai-chat-stream"),
    "openai_chat__stream_refusal_delta.sse": ("refusal", None, [], "delta.refusal fragments: the model refused", "openai-refusal"),
    "openai_chat__stream_with_moderation_chunk.sse": ("end_turn", "stop", [], "finish_reason stop", "openai-chat-stream"),
    "openai_compat_gateway__stream_truncated_tool_args_then_error.sse": ("interrupted", None, ["get_weather"], "a top-level error chunk inside a 200 stream after cut tool arguments", "openai-chat-stream"),
    "openai_responses__429_insufficient_quota.json": ("interrupted", None, [], "429 insufficient_quota", "openai-errors"),
    "openai_responses__moderation_block_policy_completed.json": ("end_turn", None, [], "status completed, no incomplete_details, no error", "openai-responses"),
    "openai_responses__stream_error_then_response_failed.sse": ("interrupted", None, [], "an error event then response.failed", "openai-responses-stream"),
    "openai_responses__stream_function_call_args_delta.sse": ("tool_use", None, [], "function_call output item, response.completed", "openai-responses-stream"),
    "openrouter__429_provider_error.json": ("interrupted", None, [], "429 from the upstream provider", "openrouter"),
    "openrouter__doc_403_guardrail_patterns.json": ("refusal", None, [], "403 guardrail block: a safety system in front of the model declined", "openrouter"),
    "openrouter__doc_midstream_error_chunk.sse": ("interrupted", "rate_limit_exceeded", [], "mid-stream error chunk (error_type rate_limit_exceeded) with finish_reason error", "openrouter"),
    "openrouter__doc_nonstream_error_in_choice.json": ("interrupted", "error", [], "200 body with finish_reason error and choices[].error", "openrouter"),
    "openrouter__doc_responses_failed_error_type.json": ("interrupted", None, [], "Responses skin: status failed with an error", "openrouter"),
    "openrouter__length_native_MAX_TOKENS_gemini.json": ("max_output", "length", [], "finish_reason length (native MAX_TOKENS)", "openrouter-overview"),
    "openrouter__length_native_length_anthropic.json": ("max_output", "length", [], "finish_reason length", "openrouter-overview"),
    "openrouter__moderation_403_testderived.json": ("refusal", None, [], "403 moderation: the input was flagged", "openrouter"),
    "openrouter__stream_error_chunk_after_length.sse": ("max_output", "length", [], "finish_reason length, then a 'Token limit reached' error chunk: length errors are a length finish", "openrouter"),
    "qwen__400_data_inspection_failed.json": ("refusal", None, [], "HTTP 400 data_inspection_failed: input data may contain inappropriate content", "qwen"),
    "qwen__400_data_inspection_failed_v2.json": ("refusal", None, [], "HTTP 400 DataInspectionFailed", "qwen"),
    "qwen__stream_tool_call_empty_id_fragments.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "qwen"),
    "vertex__finish_model_armor_finishMessage.json": ("refusal", "MODEL_ARMOR", [], "MODEL_ARMOR: the response was blocked by Model Armor", "vertex"),
    "vertex__promptFeedback_blockReason_model_armor.json": ("refusal", "MODEL_ARMOR", [], "promptFeedback.blockReason MODEL_ARMOR: the prompt was blocked, no candidates", "gemini-block"),
    "vertex__stream_functionCall_partialArgs_willContinue.sse": ("tool_use", "STOP", [], "functionCall with partialArgs closed, then STOP", "vertex"),
    "vertex__stream_partialArgs_missing_terminal_functionCall.sse": ("tool_use", "STOP", [], "partialArgs whose last fragment has no willContinue, then STOP", "vertex"),
    "xai__403_safety_check_bio.json": ("refusal", None, [], "HTTP 403 'Content violates usage guidelines' (SAFETY_CHECK_TYPE_BIO)", "xai"),
    "xai__stream_tool_call_whole_no_finish_key.sse": ("tool_use", "tool_calls", [], "finish_reason tool_calls", "xai"),
}
# fmt: on

HTTP = {  # recordings whose HTTP status is not 200 (the corpus README's "HTTP" column)
    "anthropic__400_prompt_too_long.json": 400,
    "deepseek__400_content_exists_risk.json": 400,
    "gemini__429_RESOURCE_EXHAUSTED_retryinfo.json": 429,
    "glm__400_code_1301_sensitive.json": 400,
    "groq__400_tool_use_failed.json": 400,
    "kimi__400_content_filter_high_risk.json": 400,
    "kimi__403_access_terminated_error.json": 403,
    "openai_azure__400_content_filter_innererror.json": 400,
    "openai_chat__400_invalid_prompt_safety.json": 400,
    "openai_responses__429_insufficient_quota.json": 429,
    "openrouter__429_provider_error.json": 429,
    "openrouter__doc_403_guardrail_patterns.json": 403,
    "openrouter__moderation_403_testderived.json": 403,
    "qwen__400_data_inspection_failed.json": 400,
    "qwen__400_data_inspection_failed_v2.json": 400,
    "xai__403_safety_check_bio.json": 403,
}

PROTOCOL_OVERRIDE = {  # recordings on another endpoint of their vendor
    "glm__anthropic_compat_200_model_context_window_exceeded.json": "anthropic",
    "openrouter__doc_responses_failed_error_type.json": "openai-responses",
}

CONTENT_TYPES = {".sse": "text/event-stream", ".json": "application/json",
                 ".ndjson": "application/x-ndjson"}  # fmt: skip


def _json_values(text: str, suffix: str) -> list[Any]:
    if suffix == ".json":
        return [json.loads(text)]
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            try:
                out.append(json.loads(payload))
            except ValueError:
                continue
    return out


def _call_names(value: Any) -> list[str]:
    """Names of the function tools a recording asks for, in order (client tools only:
    Anthropic server tools and their results are not the host's to run)."""
    names: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if (node.get("type") == "tool_use" and node.get("name")) or (
                node.get("type") == "function_call" and node.get("name")
            ):
                names.append(node["name"])
            elif isinstance(node.get("functionCall"), dict) and node["functionCall"].get("name"):
                names.append(node["functionCall"]["name"])
            elif isinstance(node.get("function"), dict) and node["function"].get("name"):
                names.append(node["function"]["name"])
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(value)
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def corpus_cases() -> list[dict[str, Any]]:
    cases = []
    missing = sorted(set(CORPUS) - {p.name for p in RECORDINGS.iterdir()})
    if missing:
        sys.exit(f"recordings missing: {missing}")
    for name, (stop, raw, forbidden, why, doc) in CORPUS.items():
        path = RECORDINGS / name
        text = path.read_text()
        prefix = name.split("__")[0]
        vendor, protocol = PREFIX[prefix]
        protocol = PROTOCOL_OVERRIDE.get(name, protocol)
        names = _call_names(_json_values(text, path.suffix))
        stream = path.suffix == ".sse"
        status = HTTP.get(name, 200)
        offered = names or ["delete_all"]
        cases.append(
            case(
                id="corpus." + path.stem,
                title=why,
                protocol=protocol,
                vendor=vendor,
                source={"kind": "corpus", "file": f"tests/recordings/{name}",
                        "sources": "tests/recordings/SOURCES.md"},
                stream=stream,
                tools=offered,
                status=status,
                content_type=CONTENT_TYPES[path.suffix],
                body=text,
                stop=stop,
                raw=raw,
                tool_calls=[n for n in names if n not in forbidden] if stop == "tool_use" else [],
                must_not_run=forbidden if stop == "tool_use" else names,
                why=why,
                doc=DOCS[doc],
            )
        )  # fmt: skip
    return cases


def case(
    *,
    id: str,  # noqa: A002 - the case file's own key
    title: str,
    protocol: str,
    vendor: str,
    source: dict[str, Any],
    stream: bool,
    tools: list[str],
    status: int,
    content_type: str,
    body: str,
    stop: str,
    raw: str | None,
    tool_calls: list[str],
    must_not_run: list[str],
    why: str,
    doc: str,
    text: str | None = None,
    twin: str | None = None,
    max_tokens: int | None = None,
    tool_choice: str | None = None,
) -> dict[str, Any]:
    return {
        "$schema": "../case.schema.json",
        "id": id,
        "title": title,
        "protocol": protocol,
        "vendor": vendor,
        "source": source,
        "request": {
            "stream": stream,
            "model": "test-model",
            "tools": tools,
            "max_tokens": max_tokens,
            "tool_choice": tool_choice,
        },
        "response": {"status": status, "headers": {"content-type": content_type}, "body": body},
        "expected": {
            "stop": stop,
            "raw": raw,
            "text": text,
            "tool_calls": tool_calls,
            "must_not_run": must_not_run,
        },
        "twin": twin,
        "why": why,
        "doc": doc,
    }


VENDOR_OF = {"anthropic": "anthropic", "openai-chat": "openai",
             "openai-responses": "openai-responses", "gemini": "google", "ollama": "ollama"}  # fmt: skip
DOC_OF = {"anthropic": "anthropic", "openai-chat": "openai-chat",
          "openai-responses": "openai-responses", "gemini": "gemini", "ollama": "ollama"}  # fmt: skip


def pair(
    kind: str,
    protocol: str,
    *,
    title: str,
    stop: str,
    raw: str | None,
    why: str,
    text: str = "",
    calls: list[tuple[str, str, bool]] = (),  # type: ignore[assignment]
    run: bool = False,
    args: tuple[Any, ...] = (),
    options: dict[str, Any] | None = None,
    stream_only: bool = False,
    vendor: str | None = None,
    doc: str | None = None,
    tools: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One synthesized kind on one protocol: the stream case and the body case (twins)."""
    builder = BUILDERS[protocol]
    names = [name for name, _args, _closed in calls]
    out = []
    modes = [True] if stream_only else [True, False]
    for stream in modes:
        body = builder(text, list(calls), *args, stream=stream, **(options or {}))
        ident = f"loop.{kind}.{vendor or protocol}.{'stream' if stream else 'body'}"
        ctype = ("application/x-ndjson" if protocol == "ollama" else "text/event-stream"
                 ) if stream else "application/json"  # fmt: skip
        out.append(
            case(
                id=ident,
                title=title,
                protocol=protocol,
                vendor=vendor or VENDOR_OF[protocol],
                source={"kind": "synthesized", "file": "conformance/generate_cases.py",
                        "builder": builder.__name__},
                stream=stream,
                tools=tools or names or ["delete_all"],
                status=200,
                content_type=ctype,
                body=body,
                stop=stop,
                raw=raw,
                text=text or None,
                tool_calls=names if run else [],
                must_not_run=[] if run else names,
                why=why,
                doc=DOCS[doc or DOC_OF[protocol]],
                twin=None if stream_only else f"loop.{kind}.{vendor or protocol}",
            )
        )  # fmt: skip
    return out


DELETE = ("delete_all", '{"confirm": true}', True)
DELETE_CUT = ("delete_all", '{"confir', False)
LOOKUP = ("lookup", '{"query": "paris"}', True)


def loop_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    add = cases.extend
    # refusal that came with a call: the call never runs
    add(pair("refusal_with_call", "anthropic", title="a refusal after a closed tool_use block",
             stop="refusal", raw="refusal", text="Let me do that.", calls=[DELETE],
             args=("refusal",), options={"stop_details": {"type": "refusal", "category": "cyber",
                                                          "explanation": "declined"}},
             why="stop_reason refusal: the turn was declined; a call in it must not run",
             doc="anthropic-refusals"))  # fmt: skip
    add(
        pair(
            "refusal_with_call",
            "openai-chat",
            title="content_filter with a tool call",
            stop="refusal",
            raw="content_filter",
            calls=[DELETE],
            args=("content_filter",),
            why="finish_reason content_filter: content was omitted by the content filter",
        )
    )
    add(pair("refusal_with_call", "openai-responses", title="incomplete content_filter with a call",
             stop="refusal", raw="content_filter", calls=[DELETE], args=("incomplete",),
             options={"incomplete": "content_filter"},
             why="status incomplete, incomplete_details.reason content_filter"))  # fmt: skip
    add(pair("refusal_with_call", "gemini", title="SAFETY with a functionCall", stop="refusal",
             raw="SAFETY", calls=[DELETE], args=("SAFETY",),
             why="finishReason SAFETY: the candidate was flagged for safety reasons"))  # fmt: skip
    add(pair("refusal_field_with_call", "openai-chat", title="a refusal field beside a tool call",
             stop="refusal", raw=None, calls=[DELETE], args=("stop",),
             options={"refusal": "I can't help with that."},
             why="message.refusal: the model refused", doc="openai-refusal"))  # fmt: skip
    add(pair("refusal_part_with_call", "openai-responses", title="a refusal content part",
             stop="refusal", raw=None, calls=[DELETE], args=("completed",),
             options={"refusal": "I can't help with that."},
             why="an output refusal content part: the model refused"))  # fmt: skip
    # a call the output limit cut: it never runs
    add(pair("cut_call", "anthropic", title="a tool_use block cut by max_tokens",
             stop="max_output", raw="max_tokens", calls=[DELETE_CUT], args=("max_tokens",),
             why="max_tokens: the output (the call's input) is cut off"))  # fmt: skip
    add(
        pair(
            "cut_call",
            "openai-chat",
            title="tool call arguments cut by length",
            stop="max_output",
            raw="length",
            calls=[DELETE_CUT],
            args=("length",),
            why="finish_reason length: the output (the call's arguments) is cut off",
        )
    )
    add(pair("cut_call", "openai-responses", title="function_call incomplete at max_output_tokens",
             stop="max_output", raw="max_output_tokens", calls=[DELETE_CUT], args=("incomplete",),
             options={"incomplete": "max_output_tokens"},
             why="status incomplete, incomplete_details.reason max_output_tokens"))  # fmt: skip
    # Gemini and Ollama carry arguments as whole objects: a call the wire gave whole is
    # complete even in a cut answer (the cut is after it), and is handed to the host
    add(
        pair(
            "limit_with_whole_call",
            "gemini",
            title="a whole functionCall, then MAX_TOKENS",
            stop="max_output",
            raw="MAX_TOKENS",
            calls=[DELETE],
            args=("MAX_TOKENS",),
            run=True,
            why="finishReason MAX_TOKENS: the answer was cut at the token limit, after a"
            " whole call",
        )
    )
    add(
        pair(
            "limit_with_whole_call",
            "ollama",
            title="whole tool_calls, done_reason length",
            stop="max_output",
            raw="length",
            calls=[DELETE],
            args=("length",),
            run=True,
            why="done_reason length: the answer was cut at num_predict, after a whole call",
        )
    )
    # an error inside a 200 stream: the call before it never runs
    add(pair("error_in_stream", "anthropic", title="an error event after a closed tool_use",
             stop="interrupted", raw="overloaded_error", text="Working.", calls=[DELETE],
             args=(None,), options={"error": {"type": "overloaded_error", "message": "Overloaded"}},
             stream_only=True, doc="anthropic-streaming",
             why="an error event inside a 200 stream ends the response"))  # fmt: skip
    add(pair("error_in_stream", "openai-chat", title="an error chunk after a tool call",
             stop="interrupted", raw=None, text="Working.", calls=[DELETE], args=(None,),
             options={"error": {"message": "upstream failed", "type": "server_error",
                                "code": "server_error"}},
             stream_only=True, doc="openai-chat-stream",
             why="a chunk with a top-level error ends the stream"))  # fmt: skip
    add(pair("error_in_stream", "openai-responses", title="an error event, then response.failed",
             stop="interrupted", raw=None, text="Working.", calls=[DELETE], args=("failed",),
             options={"error": {"code": "server_error", "message": "The server failed."}},
             stream_only=True, doc="openai-responses-stream",
             why="response.failed: the response failed with an error"))  # fmt: skip
    add(pair("error_in_stream", "gemini", title="an error chunk after a functionCall",
             stop="interrupted", raw=None, calls=[DELETE], args=(None,),
             options={"error": {"code": 503, "message": "The model is overloaded.",
                                "status": "UNAVAILABLE"}},
             stream_only=True, doc="gemini-errors",
             why="an error object inside a 200 stream ends the response"))  # fmt: skip
    add(pair("error_in_stream", "ollama", title="an error line after text", stop="interrupted",
             raw=None, text="Working.", args=(None,), options={"error": "model runner crashed"},
             stream_only=True,
             why="an {error} line on an already-200 stream, then EOF"))  # fmt: skip
    # a stream that ends before its terminal event (the connection closed cleanly):
    # nothing said the answer is complete, so a call in it never runs
    for protocol, finish, drop, calls, text in [
        ("anthropic", "tool_use", 2, [DELETE], "Working."),  # no message_delta, message_stop
        ("openai-chat", "tool_calls", 2, [DELETE], "Working."),  # no finish chunk, no [DONE]
        ("openai-responses", "completed", 1, [DELETE], "Working."),  # no response.completed
        ("gemini", None, 0, [DELETE], "Working."),  # the last chunk has no finishReason
        ("ollama", "stop", 1, [], "Working."),  # no done:true line
    ]:  # fmt: skip
        body = BUILDERS[protocol](text, calls, finish, stream=True)
        if drop:
            sep = "\n" if protocol == "ollama" else "\n\n"
            pieces = [p for p in body.split(sep) if p.strip()]
            body = "".join(p + sep for p in pieces[:-drop])
        names = [name for name, _args, _closed in calls]
        cases.append(case(
            id=f"loop.dropped.{protocol}.stream", title="a stream that ends before its end",
            protocol=protocol, vendor=VENDOR_OF[protocol],
            source={"kind": "synthesized", "file": "conformance/generate_cases.py",
                    "builder": BUILDERS[protocol].__name__},
            stream=True, tools=names or ["delete_all"], status=200,
            content_type="application/x-ndjson" if protocol == "ollama" else "text/event-stream",
            body=body, stop="interrupted", raw=None, text=text, tool_calls=[],
            must_not_run=names, doc=DOCS[{"anthropic": "anthropic-streaming",
                                          "openai-chat": "openai-chat-stream",
                                          "openai-responses": "openai-responses-stream",
                                          "gemini": "gemini", "ollama": "ollama"}[protocol]],
            why="the stream closed before its terminal event (message_stop, the finish chunk"
                " and [DONE], response.completed, a finishReason, done:true): the response"
                " was cut by the transport",
        ))  # fmt: skip
    # a pause
    add(pair("pause", "anthropic", title="pause_turn after text", stop="paused",
             raw="pause_turn", text="Searching.", args=("pause_turn",),
             why="pause_turn: the provider paused a long turn; continue it"))  # fmt: skip
    # context full
    add(pair("context_full", "anthropic", title="model_context_window_exceeded",
             stop="context_full", raw="model_context_window_exceeded", text="The list goes on",
             args=("model_context_window_exceeded",),
             why="model_context_window_exceeded: the context window filled"))  # fmt: skip
    add(pair("context_full_call", "anthropic", title="model_context_window_exceeded with a call",
             stop="context_full", raw="model_context_window_exceeded", calls=[DELETE_CUT],
             args=("model_context_window_exceeded",),
             why="model_context_window_exceeded: the output (the call) is cut off"))  # fmt: skip
    add(
        pair(
            "context_full",
            "openai-chat",
            vendor="mistral",
            title="model_length",
            stop="context_full",
            raw="model_length",
            text="The list goes on",
            args=("model_length",),
            doc="mistral",
            why="model_length: prompt and completion reached the model's context length",
        )
    )
    add(pair("context_full", "openai-chat", vendor="glm", title="model_context_window_exceeded",
             stop="context_full", raw="model_context_window_exceeded", text="The list goes on",
             args=("model_context_window_exceeded",), doc="glm",
             why="model_context_window_exceeded on the Z.ai endpoints"))  # fmt: skip
    # a value the runtime cannot know
    for protocol, arg in [
        ("anthropic", ("novel_stop_value",)),
        ("openai-chat", ("novel_stop_value",)),
        ("gemini", ("NOVEL_STOP_VALUE",)),
        ("ollama", ("novel_stop_value",)),
    ]:
        add(pair("unknown_value", protocol, title="a stop value no table lists", stop="other",
                 raw=arg[0], text="Some text.", args=arg,
                 why="a value outside the documented enum: unknown, kept as it was"))  # fmt: skip
    add(
        pair(
            "unknown_value_call",
            "openai-chat",
            title="an unknown value beside a whole call",
            stop="other",
            raw="novel_stop_value",
            calls=[DELETE],
            args=("novel_stop_value",),
            run=True,
            why="a value outside the documented enum: reported, and the run goes"
            " on (its whole call runs)",
        )
    )
    # vendor values beyond the protocol's table
    for vendor, value, stop, why, doc in [
        ("deepseek", "insufficient_system_resource", "interrupted",
         "insufficient_system_resource: the inference system ran out of resources", "deepseek"),
        ("glm", "sensitive", "refusal", "sensitive: the safety check intercepted the content", "glm"),
        ("glm", "network_error", "interrupted", "network_error: model inference failed", "glm"),
        ("openrouter", "error", "interrupted", "finish_reason error", "openrouter"),
        ("mistral", "error", "interrupted", "finish_reason error", "mistral"),
    ]:  # fmt: skip
        add(
            pair(
                f"vendor_{value}",
                "openai-chat",
                vendor=vendor,
                title=f"{vendor} {value}",
                stop=stop,
                raw=value,
                text="Partial",
                args=(value,),
                why=why,
                doc=doc,
            )
        )
    # documented values of each protocol's own table
    for protocol, value, stop, why, extra in [
        ("anthropic", "stop_sequence", "end_turn", "stop_sequence: a stop sequence you set", {}),
        ("anthropic", "end_turn", "end_turn", "end_turn: the natural stopping point", {}),
        ("anthropic", "max_tokens", "max_output", "max_tokens: the output limit", {}),
        ("openai-chat", "stop", "end_turn", "stop: a natural stop point", {}),
        ("openai-chat", "length", "max_output", "length: the maximum number of tokens", {}),
        ("openai-chat", "content_filter", "refusal", "content_filter: content omitted", {}),
        ("openai-responses", "completed", "end_turn", "status completed", {}),
        ("openai-responses", "max_output_tokens", "max_output", "incomplete: max_output_tokens",
         {"incomplete": "max_output_tokens"}),
        ("gemini", "STOP", "end_turn", "STOP: natural stop point", {}),
        ("gemini", "MAX_TOKENS", "max_output", "MAX_TOKENS", {}),
        ("gemini", "RECITATION", "refusal", "RECITATION: flagged for recitation", {}),
        ("gemini", "PROHIBITED_CONTENT", "refusal", "PROHIBITED_CONTENT: prohibited content", {}),
        ("gemini", "BLOCKLIST", "refusal", "BLOCKLIST: forbidden terms", {}),
        ("gemini", "SPII", "refusal", "SPII: sensitive personally identifiable information", {}),
        ("gemini", "IMAGE_SAFETY", "refusal", "IMAGE_SAFETY: generated images were flagged", {}),
        ("gemini", "MALFORMED_FUNCTION_CALL", "other",
         "MALFORMED_FUNCTION_CALL: the call the model made was not valid; a value of no class", {}),
        ("gemini", "LANGUAGE", "other", "LANGUAGE: an unsupported language; a value of no class", {}),
        ("gemini", "FINISH_REASON_UNSPECIFIED", "other", "FINISH_REASON_UNSPECIFIED: not used", {}),
        ("ollama", "stop", "end_turn", "done_reason stop", {}),
        ("ollama", "length", "max_output", "done_reason length", {}),
    ]:  # fmt: skip
        if protocol == "openai-responses":
            status = "incomplete" if extra else "completed"
            args: tuple[Any, ...] = (status,)
            raw = value if extra else None
        else:
            args, raw = (value,), value
        add(pair(f"value_{value.lower()}", protocol, title=f"{protocol} {value}", stop=stop,
                 raw=raw, text="Some text.",
                 args=args, options=extra, why=why))  # fmt: skip
    # a normal tool request: the call is handed over and runs
    for protocol, arg in [("anthropic", ("tool_use",)), ("openai-chat", ("tool_calls",)),
                          ("openai-responses", ("completed",)), ("gemini", ("STOP",)),
                          ("ollama", ("stop",))]:  # fmt: skip
        raw = {"anthropic": "tool_use", "openai-chat": "tool_calls", "gemini": "STOP",
               "ollama": "stop"}.get(protocol)  # fmt: skip
        add(pair("tool_request", protocol, title="a closed tool call, a normal end",
                 stop="tool_use", raw=raw, calls=[LOOKUP], run=True, args=arg,
                 why="the model asks for a tool and the answer ended normally"))  # fmt: skip
    # a prompt blocked before any candidate
    add(
        pair(
            "prompt_blocked",
            "gemini",
            title="promptFeedback.blockReason SAFETY, no candidates",
            stop="refusal",
            raw="SAFETY",
            args=(None,),
            options={"block": "SAFETY"},
            doc="gemini-block",
            why="blockReason SAFETY: the prompt was blocked",
        )
    )
    return cases


BUG = {
    # file: (protocol, vendor, stop, raw, tools offered, must run, must not run, why, extra)
    "cut-tool-calls/anthropic_tool_block_never_closed.sse": (
        "anthropic",
        "anthropic",
        "max_output",
        "max_tokens",
        ["delete_all"],
        [],
        ["delete_all"],
        "a tool_use block never closed, then max_tokens",
        {},
    ),
    "cut-tool-calls/openai_length_call_name_only.sse": (
        "openai-chat",
        "openai",
        "max_output",
        "length",
        ["delete_all"],
        [],
        ["delete_all"],
        "a call with a name and empty arguments, then finish_reason length",
        {},
    ),
    "cut-tool-calls/openai_tool_calls_label_unterminated_args.sse": (
        "openai-chat",
        "openai",
        "max_output",
        "tool_calls",
        ["write_file"],
        [],
        ["write_file"],
        "label tool_calls but arguments end mid-string at max_tokens",
        {"max_tokens": 24},
    ),
    "one-answer/gemini_stream_no_candidates.sse": (
        "gemini",
        "google",
        "interrupted",
        None,
        ["delete_all"],
        [],
        [],
        "an answer with no candidates and no block reason: nothing was generated",
        {},
    ),
    "one-answer/gemini_body_no_candidates.json": (
        "gemini",
        "google",
        "interrupted",
        None,
        ["delete_all"],
        [],
        [],
        "an answer with no candidates and no block reason: nothing was generated",
        {},
    ),
    "wire-2/gemini_stream_unexpected_tool_call.sse": (
        "gemini",
        "google",
        "other",
        "UNEXPECTED_TOOL_CALL",
        ["delete_all"],
        [],
        ["delete_all"],
        "UNEXPECTED_TOOL_CALL: a call although no tools were enabled (tool_choice none); a"
        " documented value of no class: the call must not run",
        {"tool_choice": "none"},
    ),
    "wire-2/openai_stream_resends_whole_call.sse": (
        "openai-chat",
        "openai",
        "tool_use",
        "tool_calls",
        ["lookup"],
        ["lookup"],
        [],
        "a stream that repeats the whole call: one call",
        {},
    ),
    "wire-2/gemini_stream_leading_empty_stop.sse": (
        "gemini",
        "google",
        "end_turn",
        "STOP",
        ["delete_all"],
        [],
        [],
        "a leading empty STOP chunk, then the answer",
        {},
    ),
    "replay/deepseek_empty_reasoning_then_tool.sse": (
        "openai-chat",
        "deepseek",
        "tool_use",
        "tool_calls",
        ["lookup"],
        ["lookup"],
        [],
        "empty reasoning, then a tool call",
        {},
    ),
}


def bug_cases() -> list[dict[str, Any]]:
    out = []
    for rel, (protocol, vendor, stop, raw, tools, run, forbidden, why, extra) in BUG.items():
        path = BUG_CASES / rel
        text = path.read_text()
        stream = path.suffix == ".sse"
        twin = "bug.gemini_no_candidates" if "no_candidates" in rel else None
        out.append(case(
            id="bug." + rel.replace("/", ".").rsplit(".", 1)[0], title=why, protocol=protocol,
            vendor=vendor, source={"kind": "bug-case", "file": f"tests/cases/{rel}",
                                   "readme": "tests/cases/README.md"},
            stream=stream, tools=tools, status=200, content_type=CONTENT_TYPES[path.suffix],
            body=text, stop=stop, raw=raw, tool_calls=run, must_not_run=forbidden, why=why,
            doc=DOCS[{"anthropic": "anthropic", "openai-chat": "openai-chat",
                      "gemini": "gemini"}[protocol]],
            twin=twin, **extra,
        ))  # fmt: skip
    return out


def main() -> None:
    cases = corpus_cases() + loop_cases() + bug_cases()
    ids = [c["id"] for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        sys.exit(f"duplicate ids: {sorted(dupes)}")
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    for c in cases:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", c["id"]) + ".json"
        (OUT / name).write_text(json.dumps(c, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases written to {OUT}")


if __name__ == "__main__":
    main()
