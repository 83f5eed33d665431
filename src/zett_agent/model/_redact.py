"""Keep credentials out of what zett keeps: stops, errors, events, spans, stored rows.

Some providers and gateways echo the API key in an error or refusal text ("Invalid
API key sk-..."). :class:`Redactor` replaces every occurrence of a secret (the
model's API key, and the values of credential headers the host passed) with
``[redacted]`` in provider text before it leaves :class:`~zett_agent.model.Model`:
``StopInfo`` (message, raw, category, detail), the answer's text and reasoning and
its provider record, stream deltas, and :class:`~zett_agent.errors.ProviderError` /
:class:`~zett_agent.errors.TransportError` messages and bodies. Secrets shorter than
:data:`MIN_SECRET` characters are not redacted (they would hit ordinary words).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from zett_agent._exchange import ModelResponse, ReasoningDelta, StreamEvent, TextDelta
from zett_agent.errors import ProviderError, ZettError
from zett_agent.stop import StopInfo

__all__ = ["MIN_SECRET", "REDACTED", "Redactor", "secrets_of"]

REDACTED = "[redacted]"
MIN_SECRET = 8
_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "cookie", "password", "signature")

T = TypeVar("T")


def secrets_of(api_key: str | None, headers: Mapping[str, str]) -> frozenset[str]:
    """The API key, and the values of the headers whose names say they carry a
    credential (``authorization``, ``*-api-key``, ``*token*``...), with a ``Bearer``
    or ``Basic`` scheme's token also on its own."""
    found: set[str] = set()
    if api_key:
        found.add(api_key)
    for name, value in headers.items():
        if any(word in name.lower() for word in _CREDENTIAL_WORDS) and value:
            found.add(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                found.add(token.strip())
    return frozenset(s for s in found if len(s) >= MIN_SECRET)


_END = object()


def _children(container: Any) -> Iterator[Any]:
    """A container's children in order: a mapping's keys and values interleaved."""
    if isinstance(container, Mapping):
        return (part for item in container.items() for part in item)
    return iter(container)


def _rebuilt(container: Any, out: list[Any]) -> Any:
    """``container`` itself when ``out`` holds its very children, else a copy of
    the same kind (a mapping becomes a dict) holding ``out``."""
    if all(a is b for a, b in zip(out, _children(container), strict=True)):
        return container
    if isinstance(container, Mapping):
        return dict(zip(out[::2], out[1::2], strict=True))
    return type(container)(out)


class Redactor:
    """Replaces ``secrets`` in provider text; a no-op when there are none."""

    __slots__ = ("secrets",)

    def __init__(self, secrets: Iterable[str]) -> None:
        # longest first, so a key that contains another is replaced whole
        self.secrets = tuple(sorted(set(secrets), key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def hit(self, text: str) -> bool:
        """Whether ``text`` holds a secret."""
        return any(s in text for s in self.secrets)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def value(self, value: T) -> T:
        """A JSON-like value with every string (keys included) redacted; the same
        object when nothing in it holds a secret. Iterative, so a value nested
        deeper than Python's recursion limit (a provider record holding 10,000
        levels of tool input) is redacted like any other: a copy is made only of
        the containers on the way to a string that changed."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value) if self.hit(value) else value  # type: ignore[return-value]
        if not isinstance(value, Mapping | list | tuple):
            return value
        return self._walk(value)  # type: ignore[no-any-return]

    def _walk(self, top: Any) -> Any:
        # Depth first, children before their container: each frame is a container
        # and the redacted values of the children seen so far.
        stack: list[tuple[Any, list[Any], Any]] = [(top, [], _children(top))]
        done: Any = top
        while stack:
            container, out, pending = stack[-1]
            child = next(pending, _END)
            if child is not _END:
                if isinstance(child, str):
                    out.append(self.text(child) if self.hit(child) else child)
                elif isinstance(child, Mapping | list | tuple):
                    stack.append((child, [], _children(child)))
                else:
                    out.append(child)
                continue
            stack.pop()
            done = _rebuilt(container, out)
            if stack:
                stack[-1][1].append(done)
        return done

    def stop(self, info: StopInfo) -> StopInfo:
        fields = (info.raw, info.category, info.message, info.recommended_model, info.detail)
        redacted = self.value(fields)
        if redacted is fields:
            return info
        raw, category, message, recommended, detail = redacted
        return replace(
            info,
            raw=raw,
            category=category,
            message=message,
            recommended_model=recommended,
            detail=detail,
        )

    def response(self, response: ModelResponse) -> ModelResponse:
        info = self.stop(response.stop_info)
        text = self.text(response.text) if self.hit(response.text) else response.text
        reasoning = response.reasoning
        if self.hit(reasoning):
            reasoning = self.text(reasoning)
        record = self.value(response.provider_record)
        if (
            info is response.stop_info
            and text is response.text
            and reasoning is response.reasoning
            and record is response.provider_record
        ):
            return response
        return replace(
            response, stop_info=info, text=text, reasoning=reasoning, provider_record=record
        )

    def event(self, event: StreamEvent) -> StreamEvent:
        if type(event) is TextDelta and self.hit(event.text):
            return TextDelta(self.text(event.text))
        if type(event) is ReasoningDelta and self.hit(event.text):
            return ReasoningDelta(self.text(event.text))
        return event

    def error(self, error: ZettError) -> ZettError:
        """``error`` with its message (and a ProviderError's message and body)
        redacted in place; returned for ``raise``."""
        error.args = tuple(self.value(list(error.args)))
        if isinstance(error, ProviderError):
            error.message = self.text(error.message)
            error.body = self.value(error.body)
        for name in ("excerpt",):
            value = getattr(error, name, None)
            if isinstance(value, str):
                setattr(error, name, self.text(value))
        return error
