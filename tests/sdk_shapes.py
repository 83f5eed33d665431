"""Request bodies checked against the official SDKs' own types (installed pinned in
the dev extra as documentation; ``src/`` never imports them): a TypedDict is
validated with pydantic (literals, nested shapes, required keys) and its top-level
keys must all be ones the SDK declares."""

from __future__ import annotations

from functools import cache
from typing import Any, get_type_hints

from pydantic import TypeAdapter


@cache
def _adapter(params: Any) -> tuple[frozenset[str], TypeAdapter[Any]]:
    """The SDK type's keys and its pydantic adapter (made once: building one takes
    tens of milliseconds)."""
    return frozenset(get_type_hints(params)), TypeAdapter(params)


def conforms(body: dict[str, Any], params: Any) -> None:
    """Raise AssertionError / ValidationError unless ``body`` fits the SDK type ``params``."""
    keys, adapter = _adapter(params)
    unknown = set(body) - keys
    assert not unknown, f"keys the SDK does not declare: {sorted(unknown)}"
    adapter.validate_python(body)


def anthropic_params(body: dict[str, Any]) -> None:
    from anthropic.types.message_create_params import (
        MessageCreateParamsNonStreaming,
        MessageCreateParamsStreaming,
    )

    conforms(
        body,
        MessageCreateParamsStreaming if body.get("stream") else MessageCreateParamsNonStreaming,
    )


def openai_chat_params(body: dict[str, Any]) -> None:
    from openai.types.chat.completion_create_params import (
        CompletionCreateParamsNonStreaming,
        CompletionCreateParamsStreaming,
    )

    conforms(
        body,
        CompletionCreateParamsStreaming
        if body.get("stream")
        else CompletionCreateParamsNonStreaming,
    )


def openai_responses_params(body: dict[str, Any]) -> None:
    from openai.types.responses.response_create_params import (
        ResponseCreateParamsNonStreaming,
        ResponseCreateParamsStreaming,
    )

    conforms(
        body,
        ResponseCreateParamsStreaming if body.get("stream") else ResponseCreateParamsNonStreaming,
    )


def gemini_params(body: dict[str, Any]) -> None:
    """Gemini REST bodies (camelCase): each part through google-genai's models, which
    forbid unknown fields."""
    from google.genai import types

    known = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    assert set(body) <= known, sorted(set(body) - known)
    for content in body["contents"]:
        types.Content.model_validate(content)
    for tool in body.get("tools", []):
        types.Tool.model_validate(tool)
    if "generationConfig" in body:
        types.GenerationConfig.model_validate(body["generationConfig"])
    if "toolConfig" in body:
        types.ToolConfig.model_validate(body["toolConfig"])


def ollama_params(body: dict[str, Any]) -> None:
    """Ollama /api/chat bodies through the ollama SDK's own request model
    (``ollama._types.ChatRequest``, a pydantic model: its fields, ``format`` a JSON
    schema or ``"json"``); its top-level keys must all be ones it declares; each
    message through its ``Message`` model (``images`` must be the base64 text the
    client's ``Image`` serializes to)."""
    from ollama._types import ChatRequest, Image, Message

    unknown = set(body) - set(ChatRequest.model_fields)
    assert not unknown, f"keys the SDK does not declare: {sorted(unknown)}"
    ChatRequest.model_validate(body)
    for message in body["messages"]:
        images = message.get("images")
        if images is None:
            Message.model_validate(message)
            continue
        parsed = Message.model_validate({**message, "images": [Image(value=i) for i in images]})
        assert [image.model_dump() for image in parsed.images or ()] == images


CHECKS = {
    "anthropic": anthropic_params,
    "openai-chat": openai_chat_params,
    "openai-responses": openai_responses_params,
    "gemini": gemini_params,
    "ollama": ollama_params,
}
