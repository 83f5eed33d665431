"""The vendor table: one row per provider, no code per vendor.

A :class:`Vendor` names its wire protocol, base URL, key variable, the stop values
it adds to its protocol's table, and how its refusals arrive as HTTP errors. The
decoders read these rows; a vendor quirk is a row entry, never an ``if vendor ==``.

Sources for each row are the provider documents listed in ``docs`` and
``../shared/corpus/WIRE.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from zett_agent.stop import StopInfo, StopReason

__all__ = ["VENDORS", "HTTPRefusal", "Vendor", "get_vendor", "match_http_refusal"]

Protocol = Literal["anthropic", "openai-chat", "openai-responses", "gemini", "ollama"]
Auth = Literal["bearer", "x-api-key", "x-goog-api-key", "none"]


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

    @property
    def base_url_variable(self) -> str:
        """``ZETT_<NAME>_BASE_URL`` (dashes become underscores)."""
        return f"ZETT_{self.name.upper().replace('-', '_')}_BASE_URL"


_R = StopReason

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
    ),
    Vendor(
        "openai-responses",
        "openai-responses",
        "https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
        otel_name="openai",
        docs="https://platform.openai.com/docs/api-reference/responses/object",
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
    ),
    Vendor(
        "kimi",
        "openai-chat",
        "https://api.moonshot.ai/v1",
        key_env=("MOONSHOT_API_KEY",),
        http_refusals=(HTTPRefusal(400, "error.type", frozenset({"content_filter"})),),
        docs="https://platform.moonshot.ai/docs/api/chat",
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
    ),
    Vendor(
        "mistral",
        "openai-chat",
        "https://api.mistral.ai/v1",
        key_env=("MISTRAL_API_KEY",),
        finish_reasons={"model_length": _R.CONTEXT_FULL, "error": _R.INTERRUPTED},
        otel_name="mistral_ai",
        docs="https://docs.mistral.ai/api/#tag/chat",
    ),
    Vendor(
        "qwen",
        "openai-chat",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        key_env=("DASHSCOPE_API_KEY",),
        # input moderation: 400 error.code data_inspection_failed
        http_refusals=(HTTPRefusal(400, "error.code", frozenset({"data_inspection_failed"})),),
        docs="https://www.alibabacloud.com/help/en/model-studio/use-qwen-by-calling-api",
    ),
    Vendor(
        "groq",
        "openai-chat",
        "https://api.groq.com/openai/v1",
        key_env=("GROQ_API_KEY",),
        docs="https://console.groq.com/docs/api-reference#chat-create",
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
    ),
    Vendor(
        "google",
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        auth="x-goog-api-key",
        otel_name="gcp.gemini",
        docs="https://ai.google.dev/api/generate-content#FinishReason",
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
