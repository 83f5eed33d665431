"""The vendor table: one row per provider, no code per vendor.

A :class:`Vendor` names its wire protocol, base URL, key variable, the stop values
it adds to its protocol's table, and how its refusals arrive as HTTP errors. The
decoders read these rows; a vendor quirk is a row entry, never an ``if vendor ==``.

Sources for each row are the provider documents listed in ``docs`` and
``../shared/corpus/WIRE.md``.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from zett_agent.stop import StopInfo, StopReason

if TYPE_CHECKING:
    from zett_agent.parts import MediaPart

__all__ = [
    "LEVEL_BUDGETS",
    "NATIVE_OUTPUTS",
    "PROTOCOL_MEDIA",
    "PROTOCOL_STRUCTURED_OUTPUT",
    "REASONING_LEVELS",
    "VENDORS",
    "HTTPRefusal",
    "MediaInput",
    "QuotaRule",
    "ReasoningMap",
    "ServerTool",
    "ServerToolShape",
    "Vendor",
    "forced_tool_allowed",
    "get_vendor",
    "match_http_refusal",
    "media_problem",
    "output_fields",
    "output_kind",
    "rate_limit_fields",
    "reasoning_fields",
    "server_tool_fields",
]

Protocol = Literal["anthropic", "openai-chat", "openai-responses", "gemini", "ollama"]
Auth = Literal["bearer", "x-api-key", "x-goog-api-key", "none"]
StructuredOutput = Literal[
    "output_config",
    "json_schema",
    "json_object_schema",
    "text_format",
    "response_json_schema",
    "response_schema",
    "format",
    "tool",
]
"""How a vendor row takes a structured answer: one of :data:`NATIVE_OUTPUTS`, or
``"tool"`` (no native mode it can be trusted with: a forced output tool)."""


@dataclass(frozen=True)
class HTTPRefusal:
    """An HTTP error status that is a refusal, not a failure.

    The rule matches when the status equals ``status`` and the value at the dotted
    ``path`` in the JSON error body is one of ``values`` (or, when ``values`` is
    empty, is present and not empty). ``category`` is a fixed category, or None to
    use the matched value; ``message_path`` says where the explanation is.
    ``message_contains``: when set, the text at ``message_path`` must also contain
    one of these (case-insensitive), for codes that are not only used for refusals.
    ``category_pattern``: a regex whose first group, found in that text, is the
    category (xAI's ``Failed check: SAFETY_CHECK_TYPE_BIO``).
    """

    status: int
    path: str
    values: frozenset[str] = frozenset()
    category: str | None = None
    message_path: str = "error.message"
    message_contains: tuple[str, ...] = ()
    category_pattern: str | None = None


@dataclass(frozen=True)
class QuotaRule:
    """A 429 that says the quota or the billing balance is used up: the value at the
    dotted ``path`` of the JSON error body is one of ``values``. Such a 429 is not
    retried (:class:`~zett_agent.errors.RateLimitError` ``quota_exhausted``)."""

    path: str
    values: frozenset[str]


REASONING_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The effort levels a reasoning setting may name, lowest first: the union of the
pinned SDKs' value sets (openai ``ReasoningEffort``: all seven; anthropic
``OutputConfig.effort``: low to max; google-genai ``ThinkingLevel``: minimal to high)."""

LEVEL_BUDGETS: Mapping[str, int] = MappingProxyType(
    {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576, "max": 32768}
)
"""Thinking budget in tokens a level stands for on a row that takes only a budget
(Qwen ``thinking_budget``): zett's own table, one doubling-ish step per level."""

BUDGET = "<budget>"
"""In a :class:`ReasoningMap`: where the budget in tokens goes."""


@dataclass(frozen=True)
class ReasoningMap:
    """How a vendor row writes a reasoning setting, as dotted body paths.

    ``levels``: for each level it takes, the fields to write (a level it does not
    list is a ConfigError naming those it does). ``budget``: the fields for a budget
    in tokens, :data:`BUDGET` standing for the number (None: the row takes no
    budget, a ConfigError). An on/off row (DeepSeek, GLM, Kimi) maps ``"none"`` to
    off and every other level to on; a budget-only row maps a level to its
    :data:`LEVEL_BUDGETS` number.
    """

    levels: Mapping[str, Mapping[str, Any]]
    budget: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ServerTool:
    """A tool the provider runs itself, declared beside the agent's own tools.

    ``kind``: ``"web_search"``, ``"code_execution"`` or ``"url_fetch"``; the vendor
    row says how it is declared (:class:`ServerToolShape`), and a row without it
    is a ConfigError before sending. ``options`` are added to the declaration as
    the provider documents them (Anthropic ``max_uses``, ``allowed_domains``;
    OpenAI ``search_context_size``...). Its calls and results (Anthropic
    ``server_tool_use`` / ``*_tool_result`` blocks, Responses ``web_search_call``
    items, Gemini ``executableCode`` parts, citations) stay in the answer's
    provider record and are replayed; they never run here.
    """

    kind: Literal["web_search", "code_execution", "url_fetch"]
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def web_search(cls, **options: Any) -> ServerTool:
        return cls("web_search", options)

    @classmethod
    def code_execution(cls, **options: Any) -> ServerTool:
        return cls("code_execution", options)

    @classmethod
    def url_fetch(cls, **options: Any) -> ServerTool:
        return cls("url_fetch", options)


@dataclass(frozen=True)
class ServerToolShape:
    """How one server tool is declared in a request body: ``entry`` appended to
    the list at ``field`` (``append``), or set as ``field``'s object; a
    :class:`ServerTool`'s options merged into ``entry`` at the dotted ``options_at``
    ("" = the entry itself)."""

    field: str
    entry: Mapping[str, Any]
    options_at: str = ""
    append: bool = True


@dataclass(frozen=True)
class MediaInput:
    """What a vendor row takes of one kind of content part (image, document, audio).

    ``media_types``: the media types it takes. ``url_media_types``: those it also
    takes as a URL the provider fetches (empty: inline bytes only; zett never
    fetches a URL itself). ``max_bytes``: the largest part's bytes (None: no
    documented limit; the provider's own 400 decides). ``in_tool_results``: the
    wire carries such parts in a tool result too (else they are left to the
    result's text, which describes them).
    """

    media_types: frozenset[str]
    url_media_types: frozenset[str] = frozenset()
    max_bytes: int | None = None
    in_tool_results: bool = False


@dataclass(frozen=True)
class Vendor:
    """One provider: where it is, how to authenticate, how it says why it stopped.

    ``finish_reasons`` maps this vendor's own stop values (beyond its protocol's
    table) to a :class:`StopReason`. ``key_env``: variables holding the API key,
    first set wins. ``base_url_env``: SDK-conventional variables for the base URL,
    read after ``ZETT_<NAME>_BASE_URL``. ``protocol_auth`` / ``protocol_base_url``:
    for a gateway used with another protocol (``Model(..., protocol=...)``), the
    auth and base URL that protocol's endpoint expects, by protocol name.
    ``otel_name``: the OpenTelemetry ``gen_ai.provider.name`` well-known value when
    it differs from ``name``. ``model_class``: ``"module:Class"`` of the Model
    subclass ``resolve_model`` builds for this vendor (default: ``Model``).
    ``reasoning``: how a reasoning setting is written (None: the protocol's
    default row in ``PROTOCOL_REASONING``, else unsupported). ``server_tools``:
    declarations by kind (None: the protocol's in ``PROTOCOL_SERVER_TOOLS``).
    ``reset_headers``: rate-limit reset headers read on a 429; ``quota_errors``:
    429 bodies that mean quota or billing (not retried). ``prompt_cache_key``:
    the row takes OpenAI's ``prompt_cache_key``. ``price_provider``: the
    genai-prices provider id (None: prices unknown, e.g. local models).
    ``media``: the content parts it takes, by kind (:class:`MediaInput`; None:
    the protocol's in ``PROTOCOL_MEDIA``; empty: text only), and ``media_note``
    what a person is told when a part is refused (why, what to use instead).
    """

    name: str
    protocol: Protocol
    base_url: str
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    auth: Auth = "bearer"
    finish_reasons: Mapping[str, StopReason] = field(default_factory=dict)
    http_refusals: tuple[HTTPRefusal, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    key_required: bool = True
    docs: str = ""
    protocol_auth: Mapping[str, Auth] = field(default_factory=dict)
    protocol_base_url: Mapping[str, str] = field(default_factory=dict)
    otel_name: str | None = None
    model_class: str | None = None
    reasoning: ReasoningMap | None = None
    server_tools: Mapping[str, ServerToolShape] | None = None
    reset_headers: tuple[str, ...] = ()
    quota_errors: tuple[QuotaRule, ...] = ()
    prompt_cache_key: bool = False
    price_provider: str | None = None
    media: Mapping[str, MediaInput] | None = None
    media_note: str = ""
    structured_output: StructuredOutput | None = None

    @property
    def base_url_variable(self) -> str:
        """``ZETT_<NAME>_BASE_URL`` (dashes become underscores)."""
        return f"ZETT_{self.name.upper().replace('-', '_')}_BASE_URL"


_R = StopReason


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

_PLURAL = {"image": "images", "document": "documents", "audio": "audio"}


def media_problem(vendor: Vendor, part: MediaPart, *, tool_result: bool = False) -> str | None:
    """Why ``vendor`` cannot take ``part`` (a user message's, or a tool result's
    with ``tool_result``), or None when it can. Read from the row's ``media``
    (else ``PROTOCOL_MEDIA``): the kind, the media type, URL or inline bytes, the
    size. A URL part is never sent in a tool result (only inline bytes are)."""
    table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA.get(vendor.protocol, {})
    kind = part.kind
    rule = table.get(kind)
    if rule is None:
        return f"it takes no {_PLURAL[kind]}"
    if tool_result and not rule.in_tool_results:
        return f"its tool results take no {_PLURAL[kind]}"
    if part.media_type not in rule.media_types:
        known = ", ".join(sorted(rule.media_types))
        return f"it takes {_PLURAL[kind]} of {known}, not {part.media_type}"
    if part.url is not None:
        if tool_result:
            return "a tool result's parts are sent as bytes, not URLs"
        if part.media_type not in rule.url_media_types:
            return (
                "it takes the bytes, not a URL (zett never fetches a URL itself: "
                "read the file and attach its bytes)"
            )
    elif rule.max_bytes is not None and (part.size or 0) > rule.max_bytes:
        return f"it is {part.size} bytes, more than the {rule.max_bytes} it takes"
    return None


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

_OPENAI_RESET = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
_OPENAI_QUOTA = (
    QuotaRule("error.code", frozenset({"insufficient_quota"})),
    QuotaRule("error.type", frozenset({"insufficient_quota"})),
)

_VENDORS: list[Vendor] = [
    Vendor(
        "anthropic",
        "anthropic",
        "https://api.anthropic.com",
        key_env=("ANTHROPIC_API_KEY",),
        base_url_env=("ANTHROPIC_BASE_URL",),
        auth="x-api-key",
        headers={"anthropic-version": "2023-06-01"},
        docs="https://docs.anthropic.com/en/api/handling-stop-reasons",
        # https://docs.anthropic.com/en/api/rate-limits#response-headers (RFC 3339)
        reset_headers=(
            "anthropic-ratelimit-requests-reset",
            "anthropic-ratelimit-tokens-reset",
            "anthropic-ratelimit-input-tokens-reset",
            "anthropic-ratelimit-output-tokens-reset",
        ),
        price_provider="anthropic",
    ),
    Vendor(
        "openai",
        "openai-chat",
        "https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
        http_refusals=(
            # a safety block before generation (corpus openai_chat__400_invalid_prompt_safety);
            # invalid_prompt alone is not always a policy block, so the message must say so
            HTTPRefusal(
                400,
                "error.code",
                frozenset({"invalid_prompt"}),
                message_contains=("safety", "usage polic"),
            ),
            # Azure OpenAI prompt filter: 400 error.code content_filter + innererror
            # (https://learn.microsoft.com/azure/ai-services/openai/concepts/content-filter)
            HTTPRefusal(400, "error.code", frozenset({"content_filter"})),
        ),
        docs="https://platform.openai.com/docs/api-reference/chat/object",
        reasoning=_OPENAI_EFFORT,
        # Chat Completions web_search_options (search models)
        server_tools={"web_search": ServerToolShape("web_search_options", {}, append=False)},
        # https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
        reset_headers=_OPENAI_RESET,
        quota_errors=_OPENAI_QUOTA,
        prompt_cache_key=True,
        price_provider="openai",
        media=_OPENAI_CHAT_MEDIA,
        # https://platform.openai.com/docs/guides/structured-outputs (strict json_schema)
        structured_output="json_schema",
    ),
    Vendor(
        "openai-responses",
        "openai-responses",
        "https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
        otel_name="openai",
        docs="https://platform.openai.com/docs/api-reference/responses/object",
        reset_headers=_OPENAI_RESET,
        quota_errors=_OPENAI_QUOTA,
        prompt_cache_key=True,
        price_provider="openai",
    ),
    Vendor(
        "deepseek",
        "openai-chat",
        "https://api.deepseek.com",
        key_env=("DEEPSEEK_API_KEY",),
        finish_reasons={
            "insufficient_system_resource": _R.INTERRUPTED,
            "aborted": _R.INTERRUPTED,
        },
        http_refusals=(
            # input moderation: 400 "Content Exists Risk" (older: {"detail": ...})
            HTTPRefusal(400, "error.message", frozenset({"Content Exists Risk"})),
            HTTPRefusal(400, "detail", frozenset({"Content Exists Risk"}), message_path="detail"),
        ),
        docs="https://api-docs.deepseek.com/api/create-chat-completion",
        reasoning=_THINKING_SWITCH,
        price_provider="deepseek",
        media={},
        media_note="DeepSeek's chat API takes text only",
    ),
    Vendor(
        "glm",
        "openai-chat",
        "https://api.z.ai/api/paas/v4",
        key_env=("ZAI_API_KEY", "ZHIPUAI_API_KEY"),
        finish_reasons={
            "sensitive": _R.REFUSAL,
            "model_context_window_exceeded": _R.CONTEXT_FULL,
            "network_error": _R.INTERRUPTED,
        },
        # 1301: "the input or output may contain unsafe or sensitive content"
        http_refusals=(HTTPRefusal(400, "error.code", frozenset({"1301"}), category="sensitive"),),
        docs="https://docs.z.ai/api-reference/llm/chat-completion",
        reasoning=_THINKING_SWITCH,
        price_provider="zai",
        # GLM-4.5V/4.6V image_url: a URL or base64, at most 5 MB (docs.z.ai vision guide)
        media={"image": _images(frozenset({"image/png", "image/jpeg"}), max_bytes=5 * _MB)},
    ),
    Vendor(
        "kimi",
        "openai-chat",
        "https://api.moonshot.ai/v1",
        key_env=("MOONSHOT_API_KEY",),
        http_refusals=(HTTPRefusal(400, "error.type", frozenset({"content_filter"})),),
        docs="https://platform.moonshot.ai/docs/api/chat",
        reasoning=_THINKING_SWITCH,
        # 429 exceeded_current_quota_error: the account's balance (WIRE.md section 8)
        quota_errors=(QuotaRule("error.type", frozenset({"exceeded_current_quota_error"})),),
        price_provider="moonshotai",
        # Kimi vision models: image_url with base64 data only (platform.moonshot.ai vision guide)
        media={"image": _images(url=False)},
    ),
    Vendor(
        "openrouter",
        "openai-chat",
        "https://openrouter.ai/api/v1",
        key_env=("OPENROUTER_API_KEY",),
        finish_reasons={"error": _R.INTERRUPTED},
        # moderation 403: metadata.reasons; guardrail 403: metadata.patterns (lists:
        # the category is their items joined, see match_http_refusal); raw: error.code
        http_refusals=(
            HTTPRefusal(403, "error.metadata.reasons"),
            HTTPRefusal(403, "error.metadata.patterns"),
        ),
        docs="https://openrouter.ai/docs/api-reference/errors",
        # https://openrouter.ai/docs/use-cases/reasoning-tokens: effort or max_tokens
        reasoning=ReasoningMap(
            _effort("reasoning.effort", ("none", "minimal", "low", "medium", "high", "xhigh")),
            budget={"reasoning.max_tokens": BUDGET},
        ),
        # https://openrouter.ai/docs/guides/features/web-search: the web plugin
        server_tools={"web_search": ServerToolShape("plugins", {"id": "web"})},
        reset_headers=("x-ratelimit-reset",),  # epoch milliseconds
        price_provider="openrouter",
        # https://openrouter.ai/docs/features/multimodal: image_url, file (PDF), input_audio
        media={
            "image": _images(),
            "document": MediaInput(_PDF),
            "audio": MediaInput(_WAV_MP3),
        },
        # https://openrouter.ai/docs/features/structured-outputs (json_schema, strict)
        structured_output="json_schema",
    ),
    Vendor(
        "mistral",
        "openai-chat",
        "https://api.mistral.ai/v1",
        key_env=("MISTRAL_API_KEY",),
        finish_reasons={"model_length": _R.CONTEXT_FULL, "error": _R.INTERRUPTED},
        otel_name="mistral_ai",
        docs="https://docs.mistral.ai/api/#tag/chat",
        price_provider="mistral",
        # https://docs.mistral.ai/capabilities/vision/: image_url (URL or base64), 10 MB
        media={"image": _images(max_bytes=10 * _MB)},
        # https://docs.mistral.ai/capabilities/structured-output/custom_structured_output/
        structured_output="json_schema",
    ),
    Vendor(
        "qwen",
        "openai-chat",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        key_env=("DASHSCOPE_API_KEY",),
        # input moderation: 400 error.code data_inspection_failed
        http_refusals=(HTTPRefusal(400, "error.code", frozenset({"data_inspection_failed"})),),
        docs="https://www.alibabacloud.com/help/en/model-studio/use-qwen-by-calling-api",
        # enable_thinking + thinking_budget (budget-only: a level is its LEVEL_BUDGETS)
        reasoning=ReasoningMap(
            {
                "none": {"enable_thinking": False},
                **{
                    level: {"enable_thinking": True, "thinking_budget": budget}
                    for level, budget in LEVEL_BUDGETS.items()
                },
            },
            budget={"enable_thinking": True, "thinking_budget": BUDGET},
        ),
        # Qwen-VL image_url (URL or base64), 10 MB (Model Studio vision guide)
        media={"image": _images(max_bytes=10 * _MB)},
    ),
    Vendor(
        "groq",
        "openai-chat",
        "https://api.groq.com/openai/v1",
        key_env=("GROQ_API_KEY",),
        docs="https://console.groq.com/docs/api-reference#chat-create",
        # https://console.groq.com/docs/reasoning: none (qwen3), low/medium/high (gpt-oss)
        reasoning=ReasoningMap(_effort("reasoning_effort", ("none", "low", "medium", "high"))),
        reset_headers=_OPENAI_RESET,
        price_provider="groq",
        # https://console.groq.com/docs/vision: image_url, base64 images up to 4 MB
        media={"image": _images(max_bytes=4 * _MB)},
    ),
    Vendor(
        "xai",
        "openai-chat",
        "https://api.x.ai/v1",
        key_env=("XAI_API_KEY",),
        # a safety check: 403 {"code": <prose>, "error": "Content violates usage
        # guidelines. ... Failed check: SAFETY_CHECK_TYPE_BIO"} (error is a string)
        http_refusals=(
            HTTPRefusal(
                403,
                "error",
                message_path="error",
                message_contains=("violates usage guidelines", "Failed check: SAFETY"),
                category_pattern=r"Failed check: (\w+)",
            ),
        ),
        otel_name="x_ai",
        docs="https://docs.x.ai/docs/api-reference#chat-completions",
        reasoning=ReasoningMap(_effort("reasoning_effort", ("low", "high"))),  # grok-3-mini
        price_provider="x-ai",
        # https://docs.x.ai/docs/guides/image-understanding: jpeg and png, 20 MiB
        media={"image": _images(frozenset({"image/png", "image/jpeg"}), max_bytes=20 * 1024**2)},
        # https://docs.x.ai/docs/guides/structured-outputs (response_format json_schema)
        structured_output="json_schema",
    ),
    Vendor(
        "llamacpp",
        "openai-chat",
        "http://127.0.0.1:8080/v1",
        key_env=("LLAMACPP_API_KEY",),
        key_required=False,
        # starts llama.cpp's server when no base URL is given; handles its faults
        model_class="zett_agent.local:LocalLlamaModel",
        docs="https://llama-cpp-python.readthedocs.io/en/latest/server/",
        media={},
        media_note=(
            "the local model (SmolLM2-135M) reads text only: it cannot see images, read "
            "documents or hear audio; ask a provider whose models can, e.g. "
            "--model anthropic:claude-sonnet-4-5 or --model google:gemini-2.5-flash"
        ),
        # the server takes only {"type": "json_object", "schema": ...}, not json_schema
        structured_output="json_object_schema",
    ),
    Vendor(
        "google",
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        auth="x-goog-api-key",
        otel_name="gcp.gemini",
        docs="https://ai.google.dev/api/generate-content#FinishReason",
        price_provider="google",
    ),
    # Vertex AI with an OAuth access token (``gcloud auth print-access-token``). The
    # project and location are part of the URL: set ZETT_VERTEX_BASE_URL to
    # https://aiplatform.googleapis.com/v1/projects/$GOOGLE_CLOUD_PROJECT/locations/
    # $GOOGLE_CLOUD_LOCATION/publishers/google (regional hosts are
    # https://$GOOGLE_CLOUD_LOCATION-aiplatform.googleapis.com/...).
    Vendor(
        "vertex",
        "gemini",
        "https://aiplatform.googleapis.com/v1/projects/{project}/locations/{location}"
        "/publishers/google",
        key_env=("VERTEX_ACCESS_TOKEN", "GOOGLE_CLOUD_ACCESS_TOKEN"),
        otel_name="gcp.vertex_ai",
        docs="https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference",
        price_provider="google",
        # Vertex GenerationConfig.responseSchema: the OpenAPI subset every Gemini model takes
        structured_output="response_schema",
    ),
    # Vertex AI express mode: an API key and no project in the URL.
    Vendor(
        "vertex-express",
        "gemini",
        "https://aiplatform.googleapis.com/v1/publishers/google",
        key_env=("VERTEX_API_KEY", "GOOGLE_CLOUD_API_KEY"),
        auth="x-goog-api-key",
        otel_name="gcp.vertex_ai",
        docs="https://cloud.google.com/vertex-ai/generative-ai/docs/start/express-mode/overview",
        price_provider="google",
        structured_output="response_schema",
    ),
    # OpenCode Zen, a gateway with one native endpoint per model family: choose the
    # protocol per model, Model("opencode-zen", name, protocol="openai-responses")
    # for GPT, "anthropic" for Claude, "gemini" for Gemini; the default row speaks
    # openai-chat (GLM, Kimi, ...). Upstream values and errors pass through (errors
    # prefixed "Error from provider (...)"); the cost frame Zen appends after the
    # end of a stream is ignored by every decoder. ../shared/corpus/WIRE.md section 14.
    Vendor(
        "opencode-zen",
        "openai-chat",
        "https://opencode.ai/zen/v1",
        key_env=("OPENCODE_API_KEY",),
        protocol_auth={"anthropic": "x-api-key", "gemini": "x-goog-api-key"},
        protocol_base_url={"anthropic": "https://opencode.ai/zen"},  # + /v1/messages
        docs="https://opencode.ai/docs/zen/",
    ),
    Vendor(
        "ollama",
        "ollama",
        "http://localhost:11434",
        key_env=("OLLAMA_API_KEY",),
        base_url_env=("OLLAMA_HOST",),
        key_required=False,
        docs="https://github.com/ollama/ollama/blob/main/docs/api.md",
    ),
]

VENDORS: Mapping[str, Vendor] = MappingProxyType({v.name: v for v in _VENDORS})
"""Every known vendor by name."""


def get_vendor(name: str) -> Vendor:
    """The vendor called ``name``. Raises :class:`~zett_agent.errors.ConfigError`."""
    from zett_agent.errors import ConfigError

    try:
        return VENDORS[name]
    except KeyError:
        known = ", ".join(sorted(VENDORS))
        raise ConfigError(f"unknown provider {name!r}; known providers: {known}") from None


def reasoning_fields(vendor: Vendor, setting: str | int) -> dict[str, Any]:
    """The body fields (dotted paths) that write ``setting`` (a level of
    :data:`REASONING_LEVELS`, or a budget in tokens) for ``vendor``.

    Raises :class:`~zett_agent.errors.ConfigError` when the row takes no reasoning
    setting, not this level, or no budget (per-model support is the provider's
    own 400)."""
    from zett_agent.errors import ConfigError

    table = vendor.reasoning or PROTOCOL_REASONING.get(vendor.protocol)
    if table is None:
        raise ConfigError(f"{vendor.name} ({vendor.protocol}) takes no reasoning setting")
    if isinstance(setting, bool) or not isinstance(setting, str | int):
        raise ConfigError(f"reasoning must be a level or a budget in tokens, got {setting!r}")
    if isinstance(setting, int):
        if table.budget is None:
            levels = ", ".join(table.levels)
            raise ConfigError(
                f"{vendor.name} takes no thinking budget, only an effort level: {levels}"
            )
        if setting < 0:
            raise ConfigError(f"a thinking budget is a number of tokens >= 0, got {setting}")
        return {k: setting if v == BUDGET else v for k, v in table.budget.items()}
    fields = table.levels.get(setting)
    if fields is None:
        known = "" if setting in REASONING_LEVELS else f" (levels: {', '.join(REASONING_LEVELS)})"
        raise ConfigError(
            f"{vendor.name} takes reasoning {', '.join(table.levels)}"
            + (" or a budget in tokens" if table.budget is not None else "")
            + f", not {setting!r}{known}"
        )
    return dict(fields)


def server_tool_fields(vendor: Vendor, tool: ServerTool) -> ServerToolShape:
    """How ``tool`` is declared for ``vendor``, its options merged in. Raises
    :class:`~zett_agent.errors.ConfigError` when the row does not have it."""
    from zett_agent.errors import ConfigError

    shapes = vendor.server_tools
    if shapes is None:
        shapes = PROTOCOL_SERVER_TOOLS.get(vendor.protocol, {})
    shape = shapes.get(tool.kind)
    if shape is None:
        known = ", ".join(shapes) or "none"
        raise ConfigError(
            f"{vendor.name} ({vendor.protocol}) has no server tool {tool.kind!r} (it has: {known})"
        )
    entry = _deep_copy(shape.entry)
    target = entry
    for part in filter(None, shape.options_at.split(".")):
        target = target[part]
    target.update(tool.options)
    return ServerToolShape(shape.field, entry, shape.options_at, shape.append)


def output_kind(vendor: Vendor) -> StructuredOutput:
    """The row's structured-output mode: its own ``structured_output``, else its
    protocol's (:data:`PROTOCOL_STRUCTURED_OUTPUT`), else ``"tool"``."""
    return vendor.structured_output or PROTOCOL_STRUCTURED_OUTPUT.get(vendor.protocol, "tool")


def forced_tool_allowed(vendor: Vendor, reasoning: str | int | None) -> bool:
    """Whether a request to ``vendor`` may force a tool with this reasoning setting:
    not with extended thinking on a protocol of
    :data:`PROTOCOL_NO_FORCED_TOOL_WITH_THINKING`."""
    thinking = reasoning is not None and reasoning != "none" and reasoning != 0
    return not (thinking and vendor.protocol in PROTOCOL_NO_FORCED_TOOL_WITH_THINKING)


def output_fields(
    vendor: Vendor, name: str, schema: Mapping[str, Any], description: str = ""
) -> dict[str, Any]:
    """The body fields (dotted paths, merged into nested objects by
    ``protocols.base.add_settings``) that ask ``vendor`` for an answer matching the
    JSON ``schema`` (an object root) in its native mode, the schema made
    acceptable to it (:mod:`zett_agent.schemas`). Raises
    :class:`~zett_agent.errors.ConfigError` for a row without a native mode."""
    from zett_agent.errors import ConfigError
    from zett_agent.schemas import anthropic_output_schema, openai_strict, sanitize_schema

    kind = output_kind(vendor)
    plain = dict(schema)
    match kind:
        case "output_config":
            return {
                "output_config.format": {
                    "type": "json_schema",
                    "schema": anthropic_output_schema(plain),
                }
            }
        case "json_schema" | "text_format":
            strict = openai_strict(plain)
            entry: dict[str, Any] = {"name": name[:64] or "result"}
            if description:
                entry["description"] = description
            entry["schema"] = strict if strict is not None else plain
            entry["strict"] = strict is not None
            if kind == "json_schema":
                return {"response_format": {"type": "json_schema", "json_schema": entry}}
            return {"text.format": {"type": "json_schema", **entry}}
        case "json_object_schema":
            return {"response_format": {"type": "json_object", "schema": plain}}
        case "response_json_schema":
            return {
                "generationConfig.responseMimeType": "application/json",
                "generationConfig.responseJsonSchema": plain,
            }
        case "response_schema":
            return {
                "generationConfig.responseMimeType": "application/json",
                "generationConfig.responseSchema": sanitize_schema(plain, "gemini"),
            }
        case "format":
            return {"format": plain}
        case "tool":
            raise ConfigError(
                f"{vendor.name} has no native structured output zett uses; "
                "use output_mode='tool' (or 'auto')"
            )


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


_DURATION = re.compile(
    r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?"
    r"(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+(?:\.\d+)?)ms)?$"
)


def reset_time(value: str, now: float | None = None) -> float | None:
    """A rate-limit reset header value as a UNIX time: an RFC 3339 time
    (Anthropic), a Go duration such as ``6m0s`` or ``20ms`` (OpenAI), epoch
    milliseconds or seconds (OpenRouter), or plain seconds; None if unreadable."""
    now = time.time() if now is None else now
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if number > 1e11:
            return number / 1000
        return number if number > 1e9 else now + max(0.0, number)
    match = _DURATION.match(text)
    if match and any(match.groupdict().values()):
        parts = {k: float(v) for k, v in match.groupdict().items() if v}
        seconds = (
            parts.get("h", 0) * 3600
            + parts.get("m", 0) * 60
            + parts.get("s", 0)
            + parts.get("ms", 0) / 1000
        )
        return now + seconds
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def rate_limit_fields(
    vendor: Vendor, headers: Mapping[str, str], body: Any, retry_after: float | None
) -> tuple[float | None, float | None, bool]:
    """What a 429 says: ``(reset_at, retry_after, quota_exhausted)``.

    ``retry_after`` (seconds, already read from ``retry-after-ms`` / ``retry-after``
    or the body) wins; else the row's ``reset_headers``: the latest reset among
    the limits whose ``-remaining`` header is 0, else the latest of all.
    ``quota_exhausted``: one of the row's ``quota_errors`` matches the body."""
    now = time.time()
    quota = any(
        isinstance(value := dig(body, rule.path), str | int) and str(value) in rule.values
        for rule in vendor.quota_errors
    )
    if retry_after is not None:
        return now + retry_after, retry_after, quota
    lowered = {k.lower(): v for k, v in headers.items()}
    found: list[tuple[bool, float]] = []
    for name in vendor.reset_headers:
        value = lowered.get(name)
        when = reset_time(value, now) if value else None
        if when is not None:
            remaining = lowered.get(name.replace("-reset", "-remaining"), "").strip()
            found.append((remaining == "0", when))
    if not found:
        return None, None, quota
    exhausted = [when for spent, when in found if spent]
    reset_at = max(exhausted or [when for _, when in found])
    return reset_at, max(0.0, reset_at - now), quota


def dig(data: Any, path: str) -> Any:
    """The value at dotted ``path`` in nested dicts, or None."""
    for part in path.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def match_http_refusal(vendor: Vendor, status: int, body: Any) -> StopInfo | None:
    """A REFUSAL StopInfo when ``status`` + JSON ``body`` match one of the vendor's
    :class:`HTTPRefusal` rules, else None.

    ``raw`` is the provider's own value (seed 002): the matched value when it is a
    code (an int, or a short string without spaces), else the body's error code or
    type (``error.code``, ``error.type``, ``code``, ``type``; a string first), else
    None -- never made up. ``category``: the rule's pattern or fixed category, else
    the matched value; a list (OpenRouter ``metadata.reasons`` / ``patterns``)
    becomes its distinct items joined with ``", "`` in the provider's order (the
    list itself stays in ``detail["error"]``). ``detail`` keeps the status and the
    error body."""
    for rule in vendor.http_refusals:
        if rule.status != status:
            continue
        value = dig(body, rule.path)
        if value in (None, "", [], {}):
            continue
        if rule.values and not (isinstance(value, str | int) and str(value) in rule.values):
            continue
        raw = _as_code(value) or _error_code(body)
        message = dig(body, rule.message_path)
        message = message if isinstance(message, str) and message else None
        if rule.message_contains and not (
            message and any(part.lower() in message.lower() for part in rule.message_contains)
        ):
            continue
        found = re.search(rule.category_pattern, message or "") if rule.category_pattern else None
        category = (found.group(1) if found else None) or rule.category or _as_category(value)
        return StopInfo(
            StopReason.REFUSAL,
            raw=raw,
            category=category,
            message=message,
            detail={
                "http_status": status,
                "error": body.get("error", body) if isinstance(body, Mapping) else body,
            },
        )
    return None


def _as_code(value: Any) -> str | None:
    """``value`` as an error code: an int, or a string of at most 64 characters
    without whitespace (not prose, not a list); else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if (
        isinstance(value, str)
        and value
        and len(value) <= 64
        and not any(c.isspace() for c in value)
    ):
        return value
    return None


def _error_code(body: Any) -> str | None:
    """The error code or type an error body carries (a string code first)."""
    found = [dig(body, path) for path in ("error.code", "error.type", "code", "type")]
    strings = [v for v in found if isinstance(v, str)]
    for value in [*strings, *found]:
        code = _as_code(value)
        if code is not None:
            return code
    return None


def _as_category(value: Any) -> str | None:
    """A matched value as one category string: a list's distinct items joined."""
    if isinstance(value, list):
        items = list(dict.fromkeys(str(v) for v in value if v not in (None, "")))
        return ", ".join(items) or None
    return str(value) if value not in (None, "") else None
