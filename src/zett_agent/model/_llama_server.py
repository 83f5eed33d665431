"""The llama.cpp server zett starts: ``python -m zett_agent.model._llama_server ARGS``.

It runs llama-cpp-python's own server (``python -m llama_cpp.server ARGS``, the same
arguments) with two of its faults (0.3.x) mended first, in that process only:

* **HTML escaping of the conversation.** The ``chatml-function-calling`` chat format
  renders the messages with a Jinja environment made with
  ``autoescape=select_autoescape(["html", "xml"])``, which turns escaping on for a
  template made from a string: ``it's "<b>"`` reached the model as
  ``it&#39;s &#34;&lt;b&gt;&#34;``, and the model copied the entities into its
  answers. :func:`render_unescaped` makes the chat formats' sandboxed Jinja
  environment one without autoescaping, so the text reaches the model as sent.
* **No token usage on a stream.** The server ignores ``stream_options``
  (``include_usage``) and streams no usage, so a run's ``max_total_tokens`` never
  counted a streamed answer. :func:`usage_on_streams` counts the tokens the model
  read (every prompt it evaluated for the request, the tool-choice step too) and
  wrote (tokens generated, the end-of-generation token excepted, as the server
  counts a non-streamed answer), and ends each streamed chat completion with the
  chunk OpenAI sends for ``include_usage``: ``choices: []`` and ``usage``
  (``prompt_tokens``, ``completion_tokens``, ``total_tokens``).

Nothing here is imported by zett itself: :class:`~zett_agent.model.LocalLlamaModel`
starts this module as a process (the ``local`` extra).
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["main", "render_unescaped", "usage_on_streams"]


def render_unescaped() -> None:
    """Make the chat formats render templates without HTML autoescaping."""
    formats: Any = importlib.import_module("llama_cpp.llama_chat_format")
    base: Any = formats.ImmutableSandboxedEnvironment
    if getattr(base, "zett_unescaped", False):
        return

    class Unescaped(base):  # type: ignore[misc]
        zett_unescaped = True

        def __init__(self, *args: Any, **options: Any) -> None:
            options["autoescape"] = False
            super().__init__(*args, **options)

    formats.ImmutableSandboxedEnvironment = Unescaped


class _Counts:
    """The tokens of the request being answered (the server answers one at a time)."""

    prompt = 0
    completion = 0


def usage_on_streams() -> None:
    """End every streamed chat completion with an OpenAI ``include_usage`` chunk."""
    llama_cpp: Any = importlib.import_module("llama_cpp")
    Llama: Any = llama_cpp.Llama  # noqa: N806 - the class, patched

    if getattr(Llama, "zett_usage_on_streams", False):
        return
    generate = Llama.generate
    chat = Llama.create_chat_completion

    def counted_generate(self: Any, tokens: Any, *args: Any, **options: Any) -> Iterator[Any]:
        _Counts.prompt += len(tokens)
        for token in generate(self, tokens, *args, **options):
            if not llama_cpp.llama_token_is_eog(self._model.vocab, token):
                _Counts.completion += 1
            yield token

    def chat_with_usage(self: Any, *args: Any, **options: Any) -> Any:
        _Counts.prompt = _Counts.completion = 0
        answer = chat(self, *args, **options)
        if not options.get("stream"):
            return answer
        return _ending_with_usage(answer)

    Llama.generate = counted_generate
    Llama.create_chat_completion = chat_with_usage
    Llama.zett_usage_on_streams = True


def _ending_with_usage(chunks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    last: dict[str, Any] = {}
    for chunk in chunks:
        last = chunk
        yield chunk
    yield {
        "id": last.get("id", "chatcmpl-usage"),
        "object": "chat.completion.chunk",
        "created": last.get("created", 0),
        "model": last.get("model", ""),
        "choices": [],
        "usage": {
            "prompt_tokens": _Counts.prompt,
            "completion_tokens": _Counts.completion,
            "total_tokens": _Counts.prompt + _Counts.completion,
        },
    }


def main(argv: list[str]) -> None:
    """Mend the server (both functions above), then run it with ``argv``."""
    render_unescaped()
    usage_on_streams()
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
