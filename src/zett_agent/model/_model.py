"""Models: a vendor row + a model name + an httpx client, ready to call.

``Model("anthropic", "claude-sonnet-4-5")`` or :func:`resolve_model` with a
``"provider:model-name"`` string. The key comes from ``api_key=`` or the vendor's
key variable (``ANTHROPIC_API_KEY`` ...); the base URL from ``base_url=``, else
``ZETT_<PROVIDER>_BASE_URL``, else the SDK-conventional variable where one exists
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``OLLAMA_HOST``), else the vendor's
default.

Transient failures before any output (429, 5xx, overloaded, connection errors)
are retried up to ``max_retries`` times with exponential backoff, honouring the
provider's retry-after and rate-limit reset headers (a wait longer than
``max_retry_wait`` or the attempt deadline is not waited for: the error is
raised, so a fallback chain moves on). A 429 that says the quota or billing is
used up is not retried. Nothing is retried once output has been streamed.

Provider records are replayed only to the vendor and model that made them: each
answer's record is stamped with its ``origin`` and a request to another vendor or
model sends that answer as text and tool calls instead. ``max_concurrency``
bounds the calls in flight per provider, model and base URL in the process; the
wait for a slot, like the wait for a pooled connection, is not counted by the
call's clocks.

Memory: every model made here shares one TLS context (:func:`shared_ssl_context`;
loading the CA bundle costs ~0.8 MB per context, which was nearly all of what 1,000
agents built from strings cost); each model keeps its own connection pool, limited
to ``max_connections``, closed by :meth:`Model.aclose` (``Agent.aclose()`` calls it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import ssl
import weakref
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from dataclasses import replace
from importlib import import_module
from typing import Any, Protocol

import anyio
import httpx

from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from zett_agent._parts import MediaPart
from zett_agent.errors import ConfigError, ProviderError, TransportError
from zett_agent.model._limits import CallTimeouts, ReadLimits
from zett_agent.model._pool import ModelTransport, ca_bundle, shared_ssl_context
from zett_agent.model._proxies import redacted
from zett_agent.model._redact import Redactor, secrets_of
from zett_agent.model._transport import send
from zett_agent.protocols import get_protocol
from zett_agent.protocols._base import WireProtocol
from zett_agent.vendors import Vendor, get_vendor

__all__ = ["Model", "ModelClient", "resolve_model", "shared_ssl_context", "stream_chunks"]


def _ssl_context(verify: ssl.SSLContext | str | bool, trust_env: bool) -> ssl.SSLContext:
    """The TLS context for ``verify`` (see :class:`Model`), made by the first https request."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        return shared_ssl_context(trust_env)
    if verify is False:
        return httpx.create_ssl_context(verify=False)
    if os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify)


class ModelClient(Protocol):
    """What the agent loop needs of a model: :class:`Model` and the offline
    :class:`~zett_agent.testing.ScriptedModel` both have it."""

    name: str

    @property
    def provider(self) -> str: ...

    def stream(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]: ...

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None: ...

    async def aclose(self) -> None: ...


class Model:
    """A provider model to call.

    Args:
        vendor: a :class:`Vendor` row or a vendor name.
        name: the model name as the provider spells it.
        api_key: the key; default: the vendor's key variable.
        base_url: the base URL; default as in the module docstring.
        protocol: override the vendor's wire protocol (gateways such as OpenCode Zen).
        max_retries: retries of a transient failure before any output.
        idle_timeout: seconds, after output started, without content progress
            (keep-alives do not count) before a stream is ended: INTERRUPTED with
            the text kept.
        first_output_timeout: seconds from sending to a stream's first output
            (bounded by ``attempt_timeout``); hitting it raises a retryable
            :class:`~zett_agent.errors.CallTimeoutError`.
        attempt_timeout: seconds for one attempt of a call, streamed or not, to
            the last byte; after output: INTERRUPTED with the text kept, before:
            :class:`~zett_agent.errors.CallTimeoutError` (not retried). Each retry
            is a new attempt.
        connect_timeout: seconds to open the connection.
        response_timeout: a non-streamed call's longest silence in seconds (the
            server sends nothing until it has the whole answer).
        pool_timeout: seconds to wait for a free pooled connection, then
            :class:`~zett_agent.errors.PoolTimeoutError`.
        max_connections: size of the model's own connection pool.
        limits: size limits (:class:`~zett_agent.model.ReadLimits`).
        stream: whether to stream responses (default True).
        client: an httpx.AsyncClient to use (its httpx timeouts and pool are then
            yours; the idle, first-output and attempt clocks and the limits apply).
        headers: extra HTTP headers sent with every request; credential-looking
            ones (``authorization``, ``*key*``, ``*token*``) are redacted like the
            key and never follow a redirect to another origin.
        max_retry_wait: the longest wait in seconds before a retry that the
            provider may ask for (``retry-after``, reset headers); asked for
            more (or more than ``attempt_timeout``), the error is raised.
        max_concurrency: calls in flight at once for this provider, model and
            base URL in the process (None: no limit); the first Model made for
            them sets the number. Waiting for a slot is not charged to the clocks.
        verify: how the provider's certificate is checked by the model's own
            client: True (the shared context: ``SSL_CERT_FILE``/``SSL_CERT_DIR``
            or certifi), an ``ssl.SSLContext``, a CA bundle file or directory
            path, or False (not checked). Ignored with ``client=``.
        proxy: one proxy URL for every call (replaces the environment's,
            ``NO_PROXY`` included). Ignored with ``client=``.
        trust_env: read ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY``
            (:mod:`zett_agent.model._proxies`, httpx 0.28's rules) and
            ``SSL_CERT_FILE``/``SSL_CERT_DIR``; False: direct connections and
            certifi's CAs. Ignored with ``client=`` (the client's own setting
            applies).

    Defaults are in :class:`~zett_agent.model.CallTimeouts`.
    """

    def __init__(
        self,
        vendor: Vendor | str,
        name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        protocol: str | None = None,
        max_retries: int = 2,
        idle_timeout: float = CallTimeouts.idle,
        first_output_timeout: float = CallTimeouts.first_output,
        attempt_timeout: float = CallTimeouts.attempt,
        connect_timeout: float = CallTimeouts.connect,
        response_timeout: float = CallTimeouts.response,
        pool_timeout: float = CallTimeouts.pool,
        max_connections: int = 100,
        limits: ReadLimits | None = None,
        stream: bool = True,
        client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
        max_retry_wait: float = 60.0,
        max_concurrency: int | None = None,
        verify: ssl.SSLContext | str | bool = True,
        proxy: str | None = None,
        trust_env: bool = True,
    ) -> None:
        self.vendor = get_vendor(vendor) if isinstance(vendor, str) else vendor
        self.name = name
        self.protocol: WireProtocol = get_protocol(protocol or self.vendor.protocol)
        if self.protocol.name != self.vendor.protocol:  # a gateway's other endpoint
            v = self.vendor
            self.vendor = replace(
                v,
                protocol=self.protocol.name,  # type: ignore[arg-type]
                auth=v.protocol_auth.get(self.protocol.name, v.auth),
                base_url=v.protocol_base_url.get(self.protocol.name, v.base_url),
            )
        self.api_key = api_key if api_key is not None else _first_env(self.vendor.key_env)
        if self.api_key is None and self.vendor.key_required:
            raise ConfigError(
                f"no API key for {self.vendor.name}: set the environment variable "
                f"{' or '.join(self.vendor.key_env)}"
            )
        self.base_url = (base_url or _base_url_from_env(self.vendor)).rstrip("/")
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.slots = _slots(self.vendor.name, name, self.base_url, max_concurrency)
        self.idle_timeout = idle_timeout
        self.timeouts = CallTimeouts(
            idle=idle_timeout,
            first_output=first_output_timeout,
            attempt=attempt_timeout,
            connect=connect_timeout,
            response=response_timeout,
            pool=pool_timeout,
        )
        self.limits = limits or ReadLimits()
        # httpx's own read timeout is only a backstop: the transport's watchdog
        # ends stalls; a whole body may be silent for response_timeout
        backstop = max(attempt_timeout, first_output_timeout, idle_timeout)
        self.whole_response_timeout = httpx.Timeout(
            backstop, read=response_timeout, connect=connect_timeout, pool=pool_timeout
        )
        # a stream on the own client: no socket read timer (aiohttp re-arms it on every
        # read); the backstop is never reached, since the watchdog ends the attempt at
        # attempt_timeout <= backstop (a host's client keeps its own read timeout)
        self._stream_timeout = httpx.Timeout(
            backstop, read=None, connect=connect_timeout, pool=pool_timeout
        )
        self.stream_responses = stream
        self.extra_headers = dict(headers or {})
        self.secrets = secrets_of(self.api_key, self.extra_headers)
        self._redactor = Redactor(self.secrets)
        self._own_client = client is None
        self._client_settings = (
            httpx.Timeout(backstop, connect=connect_timeout, pool=pool_timeout),
            httpx.Limits(max_connections=max_connections),
        )
        self.verify = verify
        self.proxy = proxy
        self.trust_env = trust_env
        self._pool: ModelTransport | None = None
        self._client = client or self._new_client()
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def _new_client(self) -> httpx.AsyncClient:
        """The model's own client: httpx's API over zett's pool (:mod:`zett_agent.model._pool`;
        the TLS context is made by the first request)."""
        timeout, limits = self._client_settings
        self._pool = ModelTransport(
            limits=limits,
            ssl_context=functools.partial(_ssl_context, self.verify, self.trust_env),
            proxy=self.proxy,
            trust_env=self.trust_env,
        )
        return httpx.AsyncClient(timeout=timeout, trust_env=self.trust_env, transport=self._pool)

    def network(self) -> dict[str, str]:
        """How this model reaches its provider, to print (``zett doctor``): ``url``
        (the base URL), ``proxy`` (the proxy URL with its credentials replaced by
        ``***``, or ``"none (direct)"``), ``ca`` (where the CA certificates come
        from) and ``source`` (what decided: ``proxy=``, the environment, or the
        host's client). Reads no network."""
        url = httpx.URL(self.base_url)
        if not self._own_client:
            return {
                "url": self.base_url,
                "proxy": "the host's httpx client decides",
                "ca": "the host's httpx client decides",
                "source": "client=",
            }
        proxy = self._pool.proxies.for_url(url) if self._pool is not None else None
        if isinstance(self.verify, ssl.SSLContext):
            ca = "the ssl.SSLContext passed as verify="
        elif isinstance(self.verify, str):
            ca = "verify=" + self.verify
        elif self.verify is False:
            ca = "not verified (verify=False)"
        else:
            ca = ca_bundle(self.trust_env)
        if self.proxy is not None:
            source = "proxy="
        elif self.trust_env:
            source = "environment"
        else:
            source = "trust_env=False"
        return {
            "url": self.base_url,
            "proxy": redacted(proxy) or "none (direct)",
            "ca": ca,
            "source": source,
        }

    def _client_here(self) -> httpx.AsyncClient:
        """The HTTP client for the running event loop: the model's own client is
        made again when the loop it was used on has closed (an agent made under
        ``asyncio.run`` and used later from :mod:`zett_agent._sync`'s loop), since
        its pooled connections belong to that dead loop. A client passed in is
        the caller's and is used as it is."""
        if not self._own_client:
            return self._client
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another async backend: one loop, nothing to track
            return self._client
        previous = self._loop() if self._loop is not None else None
        if previous is not loop:
            if self._loop is not None and (previous is None or previous.is_closed()):
                self._client = self._new_client()
            self._loop = weakref.ref(loop)
        return self._client

    @property
    def provider(self) -> str:
        """The vendor name (``"anthropic"``, ``"openrouter"``...)."""
        return self.vendor.name

    def __repr__(self) -> str:
        return f"Model({self.provider}:{self.name} @ {self.base_url})"

    async def ensure_ready(self) -> None:
        """Hook for models that need to start something (a local server) first."""

    async def aclose(self) -> None:
        """Close the HTTP client this model made (and anything it started)."""
        if self._own_client:
            await self._client.aclose()

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The provider record with its tool calls removed (see WireProtocol)."""
        return self.protocol.without_tool_calls(record)

    def headers(self) -> dict[str, str]:
        """Auth and vendor headers for a request (the key is never logged or stored)."""
        headers = dict(self.vendor.headers)
        if self.api_key:
            if self.vendor.auth == "bearer":
                headers["authorization"] = f"Bearer {self.api_key}"
            elif self.vendor.auth == "x-api-key":
                headers["x-api-key"] = self.api_key
            elif self.vendor.auth == "x-goog-api-key":
                headers["x-goog-api-key"] = self.api_key
        headers.update(self.extra_headers)
        return headers

    async def stream(
        self, request: ModelRequest, *, max_retries: int | None = None
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        """Yield the stream events of one call, then its :class:`ModelResponse`.

        Raises :class:`~zett_agent.errors.ProviderError` or
        :class:`~zett_agent.errors.TransportError` when the call fails with no
        output, after the retries (``max_retries`` for this call, default
        :attr:`max_retries`). Secrets in provider text are redacted
        (:mod:`zett_agent.model._redact`).
        """
        async with aclosing(self.stream_chunks(request, max_retries=max_retries)) as chunks:
            async for item in chunks:
                if isinstance(item, list):
                    for event in item:
                        yield event
                else:
                    yield item

    async def stream_chunks(
        self, request: ModelRequest, *, max_retries: int | None = None
    ) -> AsyncGenerator[list[StreamEvent] | ModelResponse, None]:
        """As :meth:`stream`, with the events of each network chunk in one list
        (never empty), then the :class:`ModelResponse`: one item per chunk for a
        consumer that takes events in batches (the agent loop, through
        :func:`stream_chunks`)."""
        retries = self.max_retries if max_retries is None else max_retries
        if not request.model:
            request = replace(request, model=self.name)
        if not self.stream_responses:
            request = replace(request, stream=False)
        origin = {"provider": self.vendor.name, "model": request.model}
        messages = await with_part_bytes(own_records(request.messages, origin))
        if messages is not request.messages:
            request = replace(request, messages=messages)
        # encoded before the model is made ready: a part the row cannot take (an image
        # for the local model) is a ConfigError before a local server is started
        http_request = self.protocol.encode_request(request, self.vendor)
        await self.ensure_ready()
        url = self.base_url + http_request.path
        attempt = 0
        while True:
            yielded = False
            slot = self.slots
            if slot is not None:
                await slot.acquire()  # before send(): the clocks start at the trace hook
            try:
                decoder = self.protocol.decoder(self.vendor)
                if http_request.response_format == "json":
                    timeout: httpx.Timeout | None = self.whole_response_timeout
                else:
                    timeout = self._stream_timeout if self._own_client else None
                redactor = self._redactor
                async for item in send(
                    self._client_here(),
                    url,
                    http_request,
                    self.headers(),
                    decoder,
                    timeout=timeout,
                    timeouts=self.timeouts,
                    limits=self.limits,
                    secrets=self.secrets,
                    pool=self._pool if self._own_client else None,
                ):
                    yielded = True
                    if isinstance(item, list):  # one network chunk's events
                        yield [redactor.event(e) for e in item] if redactor else item
                    else:
                        if redactor:
                            item = redactor.response(item)
                        yield _stamped(item, origin)
                return
            except (ProviderError, TransportError) as error:
                if self._redactor:
                    self._redactor.error(error)
                if yielded or not error.retryable or attempt >= retries:
                    raise
                delay = getattr(error, "retry_after", None)
                if delay is None:
                    delay = min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)
                elif delay > min(self.max_retry_wait, self.timeouts.attempt):
                    raise  # the provider asks for more than this call may wait
                attempt += 1
            finally:
                if slot is not None:
                    slot.release()
            await anyio.sleep(delay)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one call to the end and return its :class:`ModelResponse`."""
        async for item in self.stream(request):
            if isinstance(item, ModelResponse):
                return item
        raise TransportError("the call ended without a response")  # pragma: no cover


def stream_chunks(
    model: ModelClient, request: ModelRequest
) -> AsyncGenerator[list[StreamEvent] | StreamEvent | ModelResponse, None]:
    """``model``'s stream of ``request`` with events in per-chunk lists where it can:
    :meth:`Model.stream_chunks` for a :class:`Model` whose ``stream`` is Model's own
    (a subclass that changes ``stream``, such as the local model, and every other
    :class:`ModelClient` give their ``stream``: one event per item)."""
    if type(model).stream is Model.stream:
        return model.stream_chunks(request)  # type: ignore[attr-defined,no-any-return]
    return model.stream(request)


async def with_part_bytes(messages: list[Message]) -> list[Message]:
    """``messages`` with the bytes of every stored part loaded (a session store
    loads parts without them; :meth:`MediaPart.read
    <zett_agent.MediaPart.read>`), for one request; the list itself when
    none needs loading. The stored messages keep their parts unloaded."""
    if not any(
        isinstance(m, UserMessage | ToolResultMessage)
        and any(isinstance(p, MediaPart) and p.needs_loading for p in m.parts)
        for m in messages
    ):
        return messages
    out: list[Message] = []
    for message in messages:
        if isinstance(message, UserMessage | ToolResultMessage) and message.parts:
            parts = tuple(
                [await p.loaded() if isinstance(p, MediaPart) else p for p in message.parts]
            )
            message = replace(message, parts=parts)
        out.append(message)
    return out


def own_records(messages: list[Message], origin: Mapping[str, str]) -> list[Message]:
    """``messages`` with each assistant message's provider record kept only when
    it came from ``origin`` (``{"provider": vendor name, "model": model name}``):
    reasoning text, encrypted reasoning and signatures are replayed exactly to
    the vendor and model that made them, and never to another (a fallback from
    one provider to another). A record without an ``origin`` (stored before it
    existed) is kept unless the message names another provider; the protocol's
    encoder still ignores a record of another protocol. A message whose record
    is dropped is sent as its text and tool calls. Returns ``messages`` itself when
    every record is kept."""
    out: list[Message] = []
    dropped = False
    for message in messages:
        record = message.provider_record if isinstance(message, AssistantMessage) else None
        if record is not None and isinstance(message, AssistantMessage):
            mark = record.get("origin")
            if isinstance(mark, Mapping):
                foreign = (
                    mark.get("provider") != origin["provider"]
                    or mark.get("model") != origin["model"]
                )
            else:
                foreign = message.provider is not None and message.provider != origin["provider"]
            if foreign:
                message = message.replace(provider_record=None)
                dropped = True
        out.append(message)
    return out if dropped else messages


def _stamped(response: ModelResponse, origin: Mapping[str, str]) -> ModelResponse:
    record = response.provider_record
    if record is None:
        return response
    return replace(response, provider_record={**record, "origin": dict(origin)})


_SLOTS: dict[tuple[str, str, str], anyio.Semaphore] = {}


def _slots(provider: str, name: str, base_url: str, limit: int | None) -> anyio.Semaphore | None:
    """The process's semaphore for ``provider``/``name``/``base_url`` (made by the
    first Model that asks with a limit), or None without a limit."""
    if limit is None:
        return None
    if limit < 1:
        raise ConfigError(f"max_concurrency must be at least 1, got {limit}")
    key = (provider, name, base_url)
    slot = _SLOTS.get(key)
    if slot is None:
        slot = _SLOTS[key] = anyio.Semaphore(limit)
    return slot


def _first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


_URL_FIELDS = {"project": "GOOGLE_CLOUD_PROJECT", "location": "GOOGLE_CLOUD_LOCATION"}
"""Placeholders of a vendor's default base URL (Vertex) and the variables that fill them."""


def _base_url_from_env(vendor: Vendor) -> str:
    """The base URL in force: ``ZETT_<NAME>_BASE_URL``, the SDK variables, else the
    vendor's default with ``{project}`` and ``{location}`` filled from
    ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION``. Raises
    :class:`ConfigError` naming the variables when a placeholder stays unfilled."""
    url = _first_env((vendor.base_url_variable, *vendor.base_url_env)) or vendor.base_url
    if "{" in url:
        wanted = {k: v for k, v in _URL_FIELDS.items() if "{" + k + "}" in url}
        missing = [v for v in wanted.values() if not os.environ.get(v)]
        if missing:
            raise ConfigError(
                f"{vendor.name} needs {' and '.join(wanted)} in its URL: set "
                f"{' and '.join(missing)} (or {vendor.base_url_variable} to the whole base URL)"
            )
        url = url.format(**{k: os.environ[v] for k, v in wanted.items()})
    if "://" not in url:  # OLLAMA_HOST may be host:port
        url = "http://" + url
    return url


_FAMILIES = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude-", "anthropic"),
    ("gemini-", "google"),
    ("mistral-", "mistral"),
    ("magistral-", "mistral"),
    ("codestral-", "mistral"),
    ("grok-", "xai"),
    ("deepseek-", "deepseek"),
    ("glm-", "glm"),
    ("kimi-", "kimi"),
    ("qwen", "qwen"),
    ("smollm2", "llamacpp"),
)
"""Model-name beginnings and the provider that serves them under that name: the
"did you mean" of a model given without its provider (``gpt-4o``)."""


def _provider_of(name: str) -> str | None:
    """The provider a bare model name most likely belongs to, or None."""
    lowered = name.lower()
    for start, provider in _FAMILIES:
        if lowered.startswith(start):
            return provider
    return None


def resolve_model(model: Model | str, **options: object) -> Model:
    """A :class:`Model` from a Model or a ``"provider:model-name"`` string.

    Raises :class:`~zett_agent.errors.ConfigError` for a string without a provider
    or an unknown provider. ``options`` are passed to :class:`Model`.
    """
    if isinstance(model, Model):
        return model
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        guess = _provider_of(model.strip(": ")) if not name else None
        hint = f": did you mean '{guess}:{model.strip(': ')}'?" if guess else ""
        raise ConfigError(f"model must be 'provider:model-name', got {model!r}{hint}")
    vendor = get_vendor(provider)
    if vendor.model_class:  # a vendor with its own Model subclass (the local server)
        module_name, _, class_name = vendor.model_class.partition(":")
        cls = getattr(import_module(module_name), class_name)
        return cls(name, **options)  # type: ignore[no-any-return]
    return Model(vendor, name, **options)  # type: ignore[arg-type]
