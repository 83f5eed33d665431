"""What a vendor row holds: the row itself (:class:`Vendor`) and the small records in
it (HTTP-error refusals, quota rules, how reasoning, server tools and media are
written). The rows themselves are in :mod:`._table`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from zett_agent.stop import StopReason

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
