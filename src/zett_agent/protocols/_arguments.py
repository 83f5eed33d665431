"""A tool call's argument text as it arrives in fragments, and streams that repeat it.

Every protocol that streams argument text (Chat ``function.arguments``, Anthropic
``input_json_delta``, Responses ``function_call_arguments.delta``) sends increments:
the text is their concatenation. Relays and gateways are seen to break that in two
ways (``../shared/cases/wire-2/openai_stream_resends_whole_call.sse``, public reports):

* **an exact repeat**: after the increments, the whole argument text again as one
  fragment (a relay that re-sends the complete call at the end), so the joined text
  is ``{…}{…}``;
* **cumulative fragments**: each fragment is the whole text so far, so every
  non-empty fragment starts with the one before it.

:meth:`ArgumentText.read` recognizes exactly these shapes and never guesses: text that
parses as a JSON object is taken as it is (whatever its fragments looked like); text
that does not is read as the last fragment only when that fragment is a JSON object
and is either exactly everything before it (a repeat) or the end of a chain of
cumulative fragments. Text that starts with a complete JSON value followed by more
(two objects, a repeat of several fragments, a repeat that differs) is *ambiguous*:
:class:`~zett_agent.protocols._base.ResponseBuilder` withholds the answer's calls
(INTERRUPTED, ``detail["ambiguous_tool_arguments"]``). Anything else is left as it
came (a cut-off or invalid text keeps the rules it had).
"""

from __future__ import annotations

import json
from typing import Literal, TypeAlias

__all__ = ["ArgumentText", "Shape"]

Shape: TypeAlias = Literal["repeated", "cumulative", "ambiguous"]
"""How :meth:`ArgumentText.read` found the fragments; None: plain increments."""

_RUN = 512
_WHITESPACE = " \t\n\r"
_decode = json.JSONDecoder().raw_decode


class ArgumentText:
    """Fragments of one call's argument text. Every 512 fragments are joined into one
    string (linear, as ``Pieces``); the last fragment and whether the fragments so far
    chain cumulatively are kept for :meth:`read`, whose answer is kept until the next
    fragment (the response builder and a decoder's record both read it)."""

    __slots__ = ("_chain", "_count", "_last", "_limit", "_parts", "_read")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._limit = _RUN
        self._last = ""  # the last non-empty fragment
        self._count = 0  # non-empty fragments
        self._chain = True  # every non-empty fragment starts with the one before it
        self._read: tuple[str, Shape | None] | None = None

    def append(self, piece: str) -> None:
        """Add a non-empty fragment."""
        self._read = None
        if self._count and self._chain and not piece.startswith(self._last):
            self._chain = False
        self._last = piece
        self._count += 1
        parts = self._parts
        parts.append(piece)
        if len(parts) == self._limit:
            parts[-_RUN:] = ["".join(parts[-_RUN:])]
            self._limit = len(parts) + _RUN

    def join(self) -> str:
        """The fragments as they came, concatenated."""
        return "".join(self._parts)

    def __bool__(self) -> bool:
        return bool(self._parts)

    def read(self) -> tuple[str, Shape | None]:
        """The argument text and the shape it was recognized in (see the module)."""
        if self._read is None:
            self._read = self._reading()
        return self._read

    def _reading(self) -> tuple[str, Shape | None]:
        text = self.join()
        if self._count < 2 or _is_object(text):
            return text, None
        last = self._last
        if _is_object(last):
            if len(text) == 2 * len(last) and text.startswith(last):
                return last, "repeated"
            if self._chain:
                return last, "cumulative"
        return text, "ambiguous" if _value_then_more(text) else None


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _value_then_more(text: str) -> bool:
    """Whether ``text`` is a complete JSON value followed by more than whitespace."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        _, end = _decode(text, start)
    except (ValueError, RecursionError):
        return False
    return bool(text[end:].strip(_WHITESPACE))
