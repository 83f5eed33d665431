"""Wire protocols, one private module each: ``_anthropic``, ``_openai_chat``,
``_openai_responses``, ``_gemini``, ``_ollama``; :func:`get_protocol` gives one by
name. A protocol is a :class:`WireProtocol` (a request encoded for its wire) and a
:class:`Decoder` per response (sans-IO: bytes and JSON in, stream events and one
``ModelResponse`` out); CONTRIBUTING.md says how to add one."""

from __future__ import annotations

from importlib import import_module

from zett_agent.protocols._base import Decoder, WireProtocol

__all__ = ["PROTOCOLS", "Decoder", "WireProtocol", "get_protocol"]

PROTOCOLS: dict[str, str] = {
    "anthropic": "zett_agent.protocols._anthropic:AnthropicMessages",
    "openai-chat": "zett_agent.protocols._openai_chat:OpenAIChat",
    "openai-responses": "zett_agent.protocols._openai_responses:OpenAIResponses",
    "gemini": "zett_agent.protocols._gemini:Gemini",
    "ollama": "zett_agent.protocols._ollama:OllamaChat",
}
"""Protocol name -> ``module:class`` of its :class:`WireProtocol`."""

_cache: dict[str, WireProtocol] = {}


def get_protocol(name: str) -> WireProtocol:
    """The :class:`WireProtocol` called ``name`` (imported on first use)."""
    protocol = _cache.get(name)
    if protocol is None:
        try:
            module_name, _, class_name = PROTOCOLS[name].partition(":")
        except KeyError:
            from zett_agent.errors import ConfigError

            raise ConfigError(f"unknown wire protocol {name!r}") from None
        protocol = _cache[name] = getattr(import_module(module_name), class_name)()
    return protocol
