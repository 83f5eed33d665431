"""What zett sends after a stop: each assistant message's provider record checked
against the provider's documented request rules before it is sent again.

Every protocol module keeps its rules as one function, ``record -> (record to send,
repairs)`` (:data:`RecordRules`): the repairs name each rule a record breaks and
what was left out to keep it (``"thinking block 1: no signature (left out)"``);
none means the record is sent as it is. This module applies them the same way for
every protocol (:func:`sendable_record`):

* **zett's own interrupted answer** (its record carries zett's ``origin`` stamp,
  ``model/_model.py``, and its stop is INTERRUPTED, MAX_OUTPUT or a cancel): the
  repaired record is sent, deterministically (the same record gives the same
  request), and said once in a log record (logger ``zett_agent.history``, message
  ``"left out of a resent answer"``, ``extra={"zett_repairs": [...]}``) and in the
  answer's own ``stop.detail["not_resent"]`` (set by the decoder when the answer is
  made: ``Decoder.record_rules`` in ``protocols/_base.py``). The stored message is
  never changed: the session keeps what the provider sent.
* **a PAUSED answer** (Anthropic ``pause_turn``, whose unanswered
  ``server_tool_use`` the server goes on with) is sent back exactly, as the
  provider documents.
* **anything else** (a host's ``history=``/``messages=``, a record without zett's
  stamp, an answer that ended normally): never rewritten;
  :class:`~zett_agent.errors.HistoryError` before anything is sent.

Only the new tail of a history costs anything: the verdict on a message is kept
with the message object (by identity, dropped with it), and a conversation sends
the same message objects again, so a message is checked once however many turns
follow (``bench/history_check.py`` measures it).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from zett_agent._messages import AssistantMessage
from zett_agent.errors import HistoryError
from zett_agent.stop import StopReason

__all__ = ["NOT_RESENT", "OWN_STOPS", "RecordRules", "is_zetts_own", "sendable_record"]

NOT_RESENT = "not_resent"
"""``StopInfo.detail`` key: what of the answer's record is left out when it is sent
again (one line per block or item, :data:`RecordRules`)."""

log = logging.getLogger("zett_agent.history")

RecordRules: TypeAlias = Callable[[Mapping[str, Any]], tuple[Mapping[str, Any] | None, list[str]]]
"""A protocol's rules: ``record -> (the record to send or None for none, repairs)``;
no repairs: the record keeps every rule and is returned unchanged."""

OWN_STOPS = frozenset({StopReason.INTERRUPTED, StopReason.MAX_OUTPUT, StopReason.CONTEXT_FULL})
"""The stops that can leave an answer unfinished: INTERRUPTED (a cancel included),
MAX_OUTPUT and CONTEXT_FULL (a limit cut the answer where it was)."""

_Verdict: TypeAlias = tuple[Mapping[str, Any] | None, list[str]]
_CHECKED: dict[int, tuple[weakref.ref[AssistantMessage], _Verdict]] = {}


def is_zetts_own(message: AssistantMessage) -> bool:
    """Whether ``message`` is an answer zett made that an interruption may have left
    unfinished: its provider record carries zett's ``origin`` stamp and its stop is
    one of :data:`OWN_STOPS`."""
    record = message.provider_record
    stop = message.stop
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("origin"), Mapping)
        and stop is not None
        and stop.reason in OWN_STOPS
    )


def sendable_record(
    message: AssistantMessage, index: int, protocol: str, rules: RecordRules
) -> Mapping[str, Any] | None:
    """The record of ``message`` (at ``index`` of the request) to send.

    ``rules`` is the protocol's record of its provider's rules. Returns the record
    itself when it keeps them, the repaired record (None: nothing of it is sent;
    the encoder then sends the message's text) for zett's own interrupted answer,
    and raises :class:`~zett_agent.errors.HistoryError` for any other message
    whose record breaks a rule."""
    record = message.provider_record
    if not isinstance(record, Mapping) or record.get("protocol") != protocol:
        return record
    if message.stop is not None and message.stop.reason is StopReason.PAUSED:
        return record  # the provider asked for it back as it is (pause_turn)
    key = id(message)
    cached = _CHECKED.get(key)
    if cached is not None and cached[0]() is message:
        verdict = cached[1]
    else:
        verdict = rules(record)
        _CHECKED[key] = (weakref.ref(message, _forget(key)), verdict)
    repaired, repairs = verdict
    if not repairs:
        return record
    if not is_zetts_own(message):
        raise HistoryError(
            f"message {index} of the history breaks {protocol}'s request rules "
            f"({'; '.join(repairs)}), and zett did not make it by an interruption: "
            "it is not rewritten; remove or fix it before sending",
            index=index,
            rule=repairs[0],
            protocol=protocol,
        )
    if cached is None:  # said once per message, not per request
        log.info(
            "left out of a resent answer",
            extra={"zett_repairs": repairs, "zett_protocol": protocol, "zett_index": index},
        )
    return repaired


def _forget(key: int) -> Callable[[weakref.ref[AssistantMessage]], None]:
    """The callback that drops ``key``'s verdict when its message is gone."""

    def drop(_: weakref.ref[AssistantMessage]) -> None:
        _CHECKED.pop(key, None)

    return drop
