"""The stop vocabulary: why one model step ended.

Every wire protocol reads its provider's report (a finish/stop value, a refusal in
the content, a refusal sent as an HTTP error, an error inside a 200 stream) into a
:class:`StopInfo`. The runtime puts it on ``AssistantMessage.stop`` only when the
step did not end normally; a normal end or a tool request leaves ``stop`` as None.

Exception tree of this module::

    Exception
     └── AgentStopError      raised only by AssistantMessage.raise_for_stop()
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

__all__ = ["AgentStopError", "StopInfo", "StopReason"]


class StopReason(StrEnum):
    """The normalized reason a model step stopped. Values are the lowercase names."""

    END_TURN = "end_turn"
    """The model finished, or hit a stop sequence you set."""
    TOOL_USE = "tool_use"
    """The model asked for tools."""
    MAX_OUTPUT = "max_output"
    """The output limit was reached; text or a tool call's arguments is cut off."""
    CONTEXT_FULL = "context_full"
    """The context window filled; the output is cut off."""
    REFUSAL = "refusal"
    """The model, or a safety system in front of it, declined."""
    INTERRUPTED = "interrupted"
    """Infrastructure ended the response: a provider error, a dropped stream, no capacity."""
    PAUSED = "paused"
    """The provider handed control back and wants the turn continued."""
    OTHER = "other"
    """A value this library does not know; ``StopInfo.raw`` has it."""


_NORMAL = frozenset({StopReason.END_TURN, StopReason.TOOL_USE})
_TRUNCATED = frozenset({StopReason.MAX_OUTPUT, StopReason.CONTEXT_FULL})


@dataclass(frozen=True)
class StopInfo:
    """Why one model step stopped, normalized, with what the provider said kept.

    Attributes:
        reason: the normalized :class:`StopReason`. Branch on this.
        raw: the provider's own value, unchanged (``"content_filter"``,
            ``"model_context_window_exceeded"``); None when it gave none.
        category: the provider's policy category (Anthropic ``"cyber"``, Google
            ``"SAFETY"``) or, if it has none, the raw value.
        message: a sentence for a person (Anthropic's explanation, Google's
            finishMessage, an OpenAI refusal text). Show it; do not parse it.
        recommended_model: a model the provider suggests retrying on.
        detail: provider-specific facts with no normalized home, such as an
            OpenRouter ``native_finish_reason`` or ``withheld_tool_calls``.
            JSON-compatible.
    """

    reason: StopReason
    raw: str | None = None
    category: str | None = None
    message: str | None = None
    recommended_model: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the step ended normally: it finished, or it asked for tools."""
        return self.reason in _NORMAL

    @property
    def refused(self) -> bool:
        """Whether the model or a safety system declined."""
        return self.reason is StopReason.REFUSAL

    @property
    def truncated(self) -> bool:
        """Whether the output ran into a limit and is cut off."""
        return self.reason in _TRUNCATED

    def describe(self) -> str:
        """One line for a log or a notice, such as ``refusal (cyber): ...``.

        Parts the provider did not give are left out: ``"refusal"``,
        ``"refusal (cyber)"``, ``"max_output: Output cut at 5 tokens."``; so is a
        category that only repeats the reason (``"refusal"``, not
        ``"refusal (refusal)"``). It is always one line: runs of whitespace in the
        provider's words (line breaks, tabs) become one space, so a CLI notice, a
        ``MODEL_STOPPED`` handler or serve's ``data-stop`` shows the same line.
        """
        line = self.reason.value
        category = _one_line(self.category)
        if category and category != line:
            line += f" ({category})"
        message = _one_line(self.message)
        if message:
            line += f": {message}"
        return line

    def with_detail(self, **extra: Any) -> StopInfo:
        """Return a copy whose ``detail`` also holds ``extra`` (JSON-compatible values)."""
        return StopInfo(
            reason=self.reason,
            raw=self.raw,
            category=self.category,
            message=self.message,
            recommended_model=self.recommended_model,
            detail={**self.detail, **extra},
        )

    def to_dict(
        self, *, fields: Collection[str] | None = None, describe: bool = False
    ) -> dict[str, Any]:
        """The JSON form of this stop: ``{"reason": <value>, "raw", "category",
        "message", "recommended_model", "detail"}`` in that order (``detail`` a
        shallow ``dict`` copy), the form every stored message and record uses.

        ``fields`` keeps only those keys (in the order above), for the places that
        write a short form (a message's metadata in serve: ``reason``, ``raw``,
        ``category``, ``message``; MCP sampling's ``_meta``: ``reason``, ``raw``,
        ``category``). ``describe`` adds ``"describe"``: :meth:`describe`'s line, last.
        :meth:`from_dict` reads every one of these forms back.
        """
        full: dict[str, Any] = {
            "reason": self.reason.value,
            "raw": self.raw,
            "category": self.category,
            "message": self.message,
            "recommended_model": self.recommended_model,
            "detail": dict(self.detail),
        }
        record = full if fields is None else {k: v for k, v in full.items() if k in fields}
        if describe:
            record["describe"] = self.describe()
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StopInfo:
        """Read a stop written by :meth:`to_dict` (any of its forms), or stored by
        an older version.

        Only ``reason`` is required; every other key may be missing (None, and
        ``{}`` for ``detail``), and keys it does not know (``describe``, a
        record's other fields) are ignored. A reason this version does not know is
        :attr:`StopReason.OTHER`, with the stored value kept as ``raw`` when the
        record has no ``raw`` of its own, else under ``detail["stored_reason"]``.

        Raises ``ValueError`` when ``data`` is not a mapping with a string
        ``reason``, or a field has the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a stored stop must be an object, not {type(data).__name__}")
        stored = data.get("reason")
        if not isinstance(stored, str):
            raise ValueError(f"a stored stop needs a string reason, not {stored!r}")
        texts: dict[str, str | None] = {}
        for key in _TEXT_FIELDS:
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"a stored stop's {key} must be a string or null, not {value!r}")
            texts[key] = value
        detail = data.get("detail")
        if detail is None:
            detail = {}
        elif not isinstance(detail, Mapping):
            raise ValueError(f"a stored stop's detail must be an object, not {detail!r}")
        try:
            reason = StopReason(stored)
        except ValueError:
            reason = StopReason.OTHER
            if texts["raw"] is None:
                texts["raw"] = stored
            else:
                detail = {**detail, "stored_reason": stored}
        return cls(
            reason=reason,
            raw=texts["raw"],
            category=texts["category"],
            message=texts["message"],
            recommended_model=texts["recommended_model"],
            detail=dict(detail),
        )


_TEXT_FIELDS: Final = ("raw", "category", "message", "recommended_model")


def _one_line(text: str | None) -> str:
    """``text`` with every run of whitespace (line breaks included) made one space."""
    return " ".join(text.split()) if text else ""


class AgentStopError(Exception):
    """A step did not end normally and the caller asked to be told by an exception.

    Raised only by ``AssistantMessage.raise_for_stop()``; the runtime never raises
    it on its own. ``stop`` holds the :class:`StopInfo`, ``message`` the message.
    """

    def __init__(self, stop: StopInfo, message: Any = None) -> None:
        super().__init__(stop.describe())
        self.stop = stop
        self.message = message
