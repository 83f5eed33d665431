"""What each wire protocol can take, by default for its vendor rows: reasoning
settings, server tools, media inputs and structured-output modes (a row may narrow
or widen them), with the helpers the rows of :mod:`._table` write theirs with.
Sources: each protocol's document, linked on each entry, and
``../shared/corpus/WIRE.md``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ._rows import (
    BUDGET,
    REASONING_LEVELS,
    MediaInput,
    ReasoningMap,
    ServerToolShape,
    StructuredOutput,
)


def _effort(path: str, levels: Sequence[str], **extra: Any) -> dict[str, dict[str, Any]]:
    return {level: {path: level, **extra} for level in levels}


def _switch(path: str, on: Any, off: Any) -> ReasoningMap:
    """An on/off row: "none" is off, every other level on; no budget."""
    return ReasoningMap(
        {level: {path: on if level != "none" else off} for level in REASONING_LEVELS}
    )


_THINKING_SWITCH = _switch("thinking.type", "enabled", "disabled")
# DeepSeek https://api-docs.deepseek.com/guides/thinking_mode, GLM
# https://docs.z.ai/guides/capabilities/thinking, Kimi https://platform.moonshot.ai/docs

_OPENAI_EFFORT = ReasoningMap(_effort("reasoning_effort", REASONING_LEVELS))
"""openai ``ChatCompletionCreateParams.reasoning_effort`` (``ReasoningEffort``): no budget."""

_GEMINI_THINKING = "generationConfig.thinkingConfig."
PROTOCOL_REASONING: Mapping[str, ReasoningMap] = MappingProxyType(
    {
        # anthropic ThinkingConfigParam (adaptive / enabled + budget_tokens / disabled)
        # and OutputConfigParam.effort (low, medium, high, xhigh, max)
        "anthropic": ReasoningMap(
            {
                "none": {"thinking.type": "disabled"},
                **_effort(
                    "output_config.effort",
                    ("low", "medium", "high", "xhigh", "max"),
                    **{"thinking.type": "adaptive"},
                ),
            },
            budget={"thinking.type": "enabled", "thinking.budget_tokens": BUDGET},
        ),
        # openai ResponseCreateParams.reasoning.effort (Reasoning): no budget
        "openai-responses": ReasoningMap(_effort("reasoning.effort", REASONING_LEVELS)),
        # google-genai ThinkingConfig: thinking_level (MINIMAL..HIGH) or thinking_budget
        "gemini": ReasoningMap(
            {
                "none": {_GEMINI_THINKING + "thinkingBudget": 0},
                **{
                    level: {
                        _GEMINI_THINKING + "thinkingLevel": level.upper(),
                        _GEMINI_THINKING + "includeThoughts": True,
                    }
                    for level in ("minimal", "low", "medium", "high")
                },
            },
            budget={
                _GEMINI_THINKING + "thinkingBudget": BUDGET,
                _GEMINI_THINKING + "includeThoughts": True,
            },
        ),
        # Ollama /api/chat "think": a bool, or "low"/"medium"/"high" (gpt-oss)
        "ollama": ReasoningMap(
            {"none": {"think": False}, **_effort("think", ("low", "medium", "high"))}
        ),
    }
)
"""Each protocol's reasoning row, for a vendor row that gives none (Chat rows
differ too much: each says its own, or takes none)."""

_ANTHROPIC_TOOLS = {
    # anthropic WebSearchTool20250305Param, CodeExecutionTool20250825Param,
    # WebFetchTool20250910Param (tool_union_param.py)
    "web_search": ServerToolShape("tools", {"type": "web_search_20250305", "name": "web_search"}),
    "code_execution": ServerToolShape(
        "tools", {"type": "code_execution_20250825", "name": "code_execution"}
    ),
    "url_fetch": ServerToolShape("tools", {"type": "web_fetch_20250910", "name": "web_fetch"}),
}
PROTOCOL_SERVER_TOOLS: Mapping[str, Mapping[str, ServerToolShape]] = MappingProxyType(
    {
        "anthropic": _ANTHROPIC_TOOLS,
        # openai responses WebSearchToolParam, tool_param.CodeInterpreter
        "openai-responses": {
            "web_search": ServerToolShape("tools", {"type": "web_search"}),
            "code_execution": ServerToolShape(
                "tools", {"type": "code_interpreter", "container": {"type": "auto"}}
            ),
        },
        # google-genai Tool.google_search / code_execution / url_context (REST camelCase)
        "gemini": {
            "web_search": ServerToolShape("tools", {"googleSearch": {}}, "googleSearch"),
            "code_execution": ServerToolShape("tools", {"codeExecution": {}}, "codeExecution"),
            "url_fetch": ServerToolShape("tools", {"urlContext": {}}, "urlContext"),
        },
    }
)
"""Each protocol's server-tool declarations, for a vendor row that gives none."""

_MB = 1_000_000
_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_PDF = frozenset({"application/pdf"})
_WAV_MP3 = frozenset({"audio/wav", "audio/mpeg"})


def _images(
    types: frozenset[str] = _IMAGES,
    *,
    url: bool = True,
    max_bytes: int | None = None,
    in_tool_results: bool = False,
) -> MediaInput:
    return MediaInput(types, types if url else frozenset(), max_bytes, in_tool_results)


_ANTHROPIC_MEDIA = {
    # anthropic ImageBlockParam (Base64ImageSourceParam: jpeg, png, gif, webp;
    # URLImageSourceParam), DocumentBlockParam (Base64PDFSource, PlainTextSource,
    # URLPDFSource); ToolResultBlockParam.content takes both. The API refuses an
    # image whose base64 is over 5 MB (3.75 MB of bytes) and a request over 32 MB
    # (https://docs.anthropic.com/en/docs/build-with-claude/vision, .../pdf-support)
    "image": _images(max_bytes=5 * 1024 * 1024 * 3 // 4, in_tool_results=True),
    "document": MediaInput(_PDF | {"text/plain"}, _PDF, 32 * _MB, in_tool_results=True),
}
_OPENAI_CHAT_MEDIA = {
    # openai ChatCompletionContentPartImageParam (a URL or a data URL),
    # ...InputAudioParam (wav, mp3; inline), File (file_data, no URL); tool
    # messages take text parts only (ChatCompletionToolMessageParam). 50 MB of
    # images and files per request (https://platform.openai.com/docs/guides/images-vision,
    # .../pdf-files)
    "image": _images(max_bytes=50 * _MB),
    "document": MediaInput(_PDF, frozenset(), 50 * _MB),
    "audio": MediaInput(_WAV_MP3),
}
_GEMINI_DOCUMENTS = frozenset(
    {"application/pdf", "text/plain", "text/html", "text/csv", "text/markdown", "text/xml"}
)
_GEMINI_AUDIO = frozenset(
    {"audio/wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"}
)
PROTOCOL_MEDIA: Mapping[str, Mapping[str, MediaInput]] = MappingProxyType(
    {
        "anthropic": _ANTHROPIC_MEDIA,
        # what every OpenAI-compatible vision server reads: image_url parts
        "openai-chat": {"image": _images()},
        # openai ResponseInputImageParam (image_url: URL or data URL), ResponseInputFileParam
        # (file_data, file_url; PDFs); function_call_output.output takes
        # input_image / input_file too (ResponseFunctionCallOutputItemListParam); no
        # audio in ResponseInputContentParam
        "openai-responses": {
            "image": _images(max_bytes=50 * _MB, in_tool_results=True),
            "document": MediaInput(_PDF, _PDF, 50 * _MB, in_tool_results=True),
        },
        # google-genai Part.inline_data (Blob) / file_data (FileData: a Files API, gs://
        # or https URI the provider reads); FunctionResponse.parts takes inline images
        # and documents (Gemini 3). 20 MB of inline data per request
        # (https://ai.google.dev/gemini-api/docs/image-understanding, .../document-processing,
        # .../audio, .../function-calling#multimodal)
        "gemini": {
            "image": _images(
                _IMAGES - {"image/gif"} | {"image/heic", "image/heif"},
                max_bytes=20 * _MB,
                in_tool_results=True,
            ),
            "document": MediaInput(
                _GEMINI_DOCUMENTS, _GEMINI_DOCUMENTS, 20 * _MB, in_tool_results=True
            ),
            "audio": MediaInput(_GEMINI_AUDIO, _GEMINI_AUDIO, 20 * _MB),
        },
        # Ollama /api/chat "images": base64 only (no URLs), no documents or audio
        "ollama": {"image": _images(_IMAGES - {"image/gif"}, url=False)},
    }
)
"""Each protocol's content parts, for a vendor row that gives none (``Vendor.media``)."""


NATIVE_OUTPUTS: Mapping[str, str] = MappingProxyType(
    {
        # anthropic OutputConfigParam.format: JSONOutputFormatParam {type: json_schema, schema}
        "output_config": "output_config.format = {type: json_schema, schema}",
        # openai ResponseFormatJSONSchema {type: json_schema, json_schema: {name, schema, strict}}
        "json_schema": "response_format = {type: json_schema, json_schema: {...}}",
        # llama-cpp-python 0.3.36 ChatCompletionRequestResponseFormat {type: json_object,
        # schema}: a grammar from the schema, applied only when no tool_choice is sent
        "json_object_schema": "response_format = {type: json_object, schema}",
        # openai ResponseFormatTextJSONSchemaConfigParam {type: json_schema, name, schema, strict}
        "text_format": "text.format = {type: json_schema, name, schema, strict}",
        # google-genai GenerationConfig.response_json_schema (JSON Schema as it is)
        "response_json_schema": "generationConfig.responseJsonSchema + responseMimeType",
        # google-genai GenerationConfig.response_schema (the OpenAPI subset, sanitized)
        "response_schema": "generationConfig.responseSchema + responseMimeType",
        # ollama ChatRequest.format: a JSON schema
        "format": "format = <JSON schema>",
    }
)
"""The native structured-output modes, by name: where each writes the schema."""

PROTOCOL_STRUCTURED_OUTPUT: Mapping[str, StructuredOutput] = MappingProxyType(
    {
        "anthropic": "output_config",
        "openai-chat": "tool",  # a Chat row says whether it takes json_schema
        "openai-responses": "text_format",
        "gemini": "response_json_schema",
        "ollama": "format",
    }
)
"""Each protocol's structured-output mode, for a vendor row that gives none."""

PROTOCOL_NO_FORCED_TOOL_WITH_THINKING = frozenset({"anthropic"})
"""Protocols that reject a forced tool (``tool_choice`` any or a named tool) while
extended thinking is on (Anthropic: "Tool choice ... not supported with extended
thinking", https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking)."""
