"""The vendor table: one :class:`~._rows.Vendor` row per provider, and
:func:`get_vendor`. Sources for each row are the provider documents named in its
``docs`` and ``../shared/corpus/WIRE.md``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from zett_agent.stop import StopReason

from ._capabilities import (
    _MB,
    _OPENAI_CHAT_MEDIA,
    _OPENAI_EFFORT,
    _PDF,
    _THINKING_SWITCH,
    _WAV_MP3,
    _effort,
    _images,
)
from ._rows import (
    BUDGET,
    LEVEL_BUDGETS,
    HTTPRefusal,
    MediaInput,
    QuotaRule,
    ReasoningMap,
    ServerToolShape,
    Vendor,
)

_R = StopReason

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
        model_class="zett_agent.model._local:LocalLlamaModel",
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
