"""Wire protocols, one module each: ``anthropic``, ``openai_chat``,
``openai_responses``, ``gemini``, ``ollama``. See :mod:`zett_agent.protocols._base`."""

from __future__ import annotations

from importlib import import_module

from zett_agent.protocols._base import WireProtocol

__all__ = ["PROTOCOLS", "get_protocol"]

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
