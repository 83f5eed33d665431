"""Validators of each provider's request rules, for a request body zett encoded.

``validate(protocol, body)`` checks the body's shape against the pinned official
SDK's request types (``sdk_shapes.CHECKS``) and then every hand-written rule of
that protocol below: one function per documented invariant, its source in its
docstring. Each returns the problems it found (an empty list: the rule holds), so
a test can say which rule a body broke. Written from the providers' documents,
not from zett's code: they are the test's independent view of what a provider
accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk_shapes import CHECKS

Rule = Callable[[dict[str, Any]], list[str]]


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_thinking_is_signed(body: dict[str, Any]) -> list[str]:
    """A thinking block sent back carries its signature, a redacted one its data:
    "Invalid signature in thinking block" otherwise. Extended thinking, "Preserving
    thinking blocks": https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"""
    found = []
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(_blocks(message)):
            if block.get("type") == "thinking" and not block.get("signature"):
                found.append(f"messages[{m}].content[{b}]: thinking without a signature")
            if block.get("type") == "redacted_thinking" and not block.get("data"):
                found.append(f"messages[{m}].content[{b}]: redacted_thinking without data")
    return found


def anthropic_server_tool_use_has_its_result(body: dict[str, Any]) -> list[str]:
    """A ``server_tool_use`` block is followed by its result block (same id) in the
    same assistant turn; only the request's last message may hold one unanswered
    (a ``pause_turn`` continuation). Web search tool:
    https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool and
    https://docs.anthropic.com/en/api/handling-stop-reasons (pause_turn)."""
    found = []
    messages = body["messages"]
    for m, message in enumerate(messages):
        if message.get("role") != "assistant" or m == len(messages) - 1:
            continue
        blocks = _blocks(message)
        answered = {
            b.get("tool_use_id") for b in blocks if str(b.get("type", "")).endswith("_tool_result")
        }
        for b, block in enumerate(blocks):
            server = block.get("type") in ("server_tool_use", "mcp_tool_use")
            if server and block.get("id") not in answered:
                found.append(f"messages[{m}].content[{b}]: {block['type']} without a result")
    return found


def anthropic_tool_use_has_its_result(body: dict[str, Any]) -> list[str]:
    """Each ``tool_use`` of an assistant turn is answered by a ``tool_result`` in the
    next (user) message, and each ``tool_result`` answers a ``tool_use`` of the turn
    before it. Implement tool use:
    https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use"""
    found = []
    messages = body["messages"]
    for m, message in enumerate(messages):
        if message.get("role") == "assistant":
            ids = [b.get("id") for b in _blocks(message) if b.get("type") == "tool_use"]
            following = messages[m + 1] if m + 1 < len(messages) else None
            answered = {
                b.get("tool_use_id")
                for b in (_blocks(following) if following else [])
                if b.get("type") == "tool_result"
            }
            found += [
                f"messages[{m}]: tool_use {i} without a result" for i in ids if i not in answered
            ]
        elif message.get("role") == "user":
            before = messages[m - 1] if m else None
            asked = {
                b.get("id")
                for b in (_blocks(before) if before and before.get("role") == "assistant" else [])
                if b.get("type") == "tool_use"
            }
            for block in _blocks(message):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in asked:
                    found.append(
                        f"messages[{m}]: tool_result {block.get('tool_use_id')} answers no tool_use"
                    )
    return found


def anthropic_text_blocks_are_not_empty(body: dict[str, Any]) -> list[str]:
    """ "text content blocks must be non-empty", and every message but an optional
    final assistant message has content. Messages API reference:
    https://docs.anthropic.com/en/api/messages"""
    found = []
    messages = body["messages"]
    for m, message in enumerate(messages):
        content = message.get("content")
        if content in ("", []) and not (m == len(messages) - 1 and message["role"] == "assistant"):
            found.append(f"messages[{m}]: empty content")
        for b, block in enumerate(_blocks(message)):
            if block.get("type") == "text" and block.get("text") == "":
                found.append(f"messages[{m}].content[{b}]: empty text block")
    return found


def anthropic_prefill_has_no_trailing_whitespace(body: dict[str, Any]) -> list[str]:
    """A final assistant message (a prefill) does not end with whitespace ("final
    assistant content cannot end with trailing whitespace"). Prefill Claude's
    response: https://docs.anthropic.com/en/docs/build-with-claude/prompt-engineering/prefill-claudes-response"""
    last = body["messages"][-1] if body["messages"] else {}
    if last.get("role") != "assistant":
        return []
    content = last.get("content")
    text = content if isinstance(content, str) else ""
    if isinstance(content, list) and content and content[-1].get("type") == "text":
        text = content[-1].get("text", "")
    return ["the final assistant message ends with whitespace"] if text != text.rstrip() else []


def anthropic_thinking_budget_fits(body: dict[str, Any]) -> list[str]:
    """``thinking.budget_tokens`` is at least 1,024 and less than ``max_tokens``.
    Extended thinking: https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
    (the SDK's ``ThinkingConfigEnabledParam.budget_tokens``)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return []
    budget = thinking.get("budget_tokens", 0)
    if budget < 1024 or budget >= body["max_tokens"]:
        return [f"budget_tokens {budget} with max_tokens {body['max_tokens']}"]
    return []


# ---------------------------------------------------------------- OpenAI Chat Completions


def chat_tool_calls_are_answered(body: dict[str, Any]) -> list[str]:
    """ "An assistant message with 'tool_calls' must be followed by tool messages
    responding to each 'tool_call_id'", and a tool message answers a call of the
    assistant message before it. Function calling:
    https://platform.openai.com/docs/guides/function-calling"""
    found = []
    messages = body["messages"]
    open_calls: set[str] = set()
    known: set[str] = set()
    for m, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in known:
                found.append(f"messages[{m}]: tool message answers no call")
            open_calls.discard(message.get("tool_call_id"))
            continue
        if open_calls:
            found.append(f"messages[{m}]: calls {sorted(open_calls)} have no tool message")
            open_calls.clear()
        known = set()
        if role == "assistant":
            ids = {c.get("id") for c in message.get("tool_calls") or []}
            open_calls, known = set(ids), set(ids)
    if open_calls:
        found.append(f"calls {sorted(open_calls)} have no tool message")
    return found


def chat_assistant_has_content_or_calls(body: dict[str, Any]) -> list[str]:
    """An assistant message's ``content`` is "Required unless tool_calls or
    function_call is specified", and each call's ``arguments`` is a string. Chat
    API reference: https://platform.openai.com/docs/api-reference/chat/create"""
    found = []
    for m, message in enumerate(body["messages"]):
        if message.get("role") != "assistant":
            continue
        if message.get("content") is None and not message.get("tool_calls"):
            found.append(f"messages[{m}]: neither content nor tool_calls")
        for call in message.get("tool_calls") or []:
            if not isinstance(call.get("function", {}).get("arguments"), str):
                found.append(f"messages[{m}]: a call's arguments are not a string")
    return found


# ---------------------------------------------------------------- OpenAI Responses


def responses_reasoning_has_its_following_item(body: dict[str, Any]) -> list[str]:
    """A ``reasoning`` input item is followed by the item it led to ("Item 'rs_...'
    of type 'reasoning' was provided without its required following item"). Reasoning
    models: https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context"""
    items = body["input"]
    found = []
    for n, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "reasoning":
            after = next((i for i in items[n + 1 :] if i.get("type") != "reasoning"), {})
            output_item = after.get("type") == "function_call" or (
                after.get("type") == "message" and "id" in after
            )
            if not output_item:
                found.append(f"input[{n}]: reasoning without its following item")
    return found


def responses_calls_and_outputs_pair(body: dict[str, Any]) -> list[str]:
    """Each ``function_call`` has a ``function_call_output`` with its ``call_id``, and
    each output answers an earlier call ("No tool call found for function call
    output"). Function calling: https://platform.openai.com/docs/guides/function-calling"""
    found = []
    calls: set[str] = set()
    answered: set[str] = set()
    for n, item in enumerate(body["input"]):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            if item["call_id"] not in calls:
                found.append(f"input[{n}]: output for no call")
            answered.add(item["call_id"])
    found += [f"call {c} has no output" for c in sorted(calls - answered)]
    return found


def responses_item_ids_are_unique(body: dict[str, Any]) -> list[str]:
    """Input item ids are unique ("Duplicate item found with id"). Conversation
    state: https://platform.openai.com/docs/guides/conversation-state"""
    ids = [i.get("id") for i in body["input"] if isinstance(i, dict) and i.get("id")]
    return (
        [f"duplicate ids {sorted({i for i in ids if ids.count(i) > 1})}"]
        if len(ids) != len(set(ids))
        else []
    )


# ---------------------------------------------------------------- Gemini

_GEMINI_DATA = {
    "text", "inlineData", "fileData", "functionCall", "functionResponse",
    "executableCode", "codeExecutionResult",
}  # fmt: skip


def gemini_parts_hold_one_datum(body: dict[str, Any]) -> list[str]:
    """Every ``Part`` holds exactly one data field (``data`` is a union: text,
    inlineData, functionCall...), and every ``Content`` has parts. API reference:
    https://ai.google.dev/api/caching#Part and https://ai.google.dev/api/caching#Content"""
    found = []
    for c, content in enumerate(body["contents"]):
        parts = content.get("parts") or []
        if not parts:
            found.append(f"contents[{c}]: no parts")
        for p, part in enumerate(parts):
            data = set(part) & _GEMINI_DATA
            if len(data) != 1:
                found.append(f"contents[{c}].parts[{p}]: data fields {sorted(data)}")
    return found


def gemini_calls_are_answered(body: dict[str, Any]) -> list[str]:
    """A model turn with function calls is followed by a user turn with as many
    function responses ("the number of function response parts is equal to the
    number of function call parts"). Function calling:
    https://ai.google.dev/gemini-api/docs/function-calling"""
    found = []
    contents = body["contents"]
    for c, content in enumerate(contents):
        calls = sum("functionCall" in p for p in content.get("parts") or [])
        if content.get("role") not in ("user", "model"):
            found.append(f"contents[{c}]: role {content.get('role')!r}")
        if not calls:
            continue
        after = contents[c + 1] if c + 1 < len(contents) else {}
        answers = sum("functionResponse" in p for p in after.get("parts") or [])
        if answers != calls:
            found.append(f"contents[{c}]: {calls} calls, {answers} responses")
    return found


# ---------------------------------------------------------------- Ollama


def ollama_tool_messages_follow_calls(body: dict[str, Any]) -> list[str]:
    """Roles are system, user, assistant or tool; a ``tool`` message follows an
    assistant message with ``tool_calls`` (or another tool message). Chat request
    with tools: https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-tools"""
    found = []
    previous: dict[str, Any] = {}
    for m, message in enumerate(body["messages"]):
        if message.get("role") not in ("system", "user", "assistant", "tool"):
            found.append(f"messages[{m}]: role {message.get('role')!r}")
        if message.get("role") == "tool" and not (
            previous.get("role") == "tool" or previous.get("tool_calls")
        ):
            found.append(f"messages[{m}]: a tool message after no call")
        previous = message
    return found


RULES: dict[str, list[Rule]] = {
    "anthropic": [
        anthropic_thinking_is_signed,
        anthropic_server_tool_use_has_its_result,
        anthropic_tool_use_has_its_result,
        anthropic_text_blocks_are_not_empty,
        anthropic_prefill_has_no_trailing_whitespace,
        anthropic_thinking_budget_fits,
    ],
    "openai-chat": [chat_tool_calls_are_answered, chat_assistant_has_content_or_calls],
    "openai-responses": [
        responses_reasoning_has_its_following_item,
        responses_calls_and_outputs_pair,
        responses_item_ids_are_unique,
    ],
    "gemini": [gemini_parts_hold_one_datum, gemini_calls_are_answered],
    "ollama": [ollama_tool_messages_follow_calls],
}


def problems(protocol: str, body: dict[str, Any]) -> list[str]:
    """Every rule ``body`` breaks, ``"rule: problem"``, after the SDK shape check
    (which raises)."""
    CHECKS[protocol](body)
    return [f"{rule.__name__}: {p}" for rule in RULES[protocol] for p in rule(body)]
