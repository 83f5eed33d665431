"""Test helpers that ship with the library, so hosts can test offline:
:class:`ScriptedModel` (no socket) and :class:`ReplayServer` (a real socket
replaying recorded provider traffic) and :class:`ReplayTransport` (the same
replies in the process, paced by the event loop's clock)."""

from zett_agent.testing._paced import ReplayTransport
from zett_agent.testing._replay import RecordedRequest, ReplayServer, Reply
from zett_agent.testing._scripted import ScriptedModel, ScriptedTurn, reply

__all__ = [
    "RecordedRequest",
    "ReplayServer",
    "ReplayTransport",
    "Reply",
    "ScriptedModel",
    "ScriptedTurn",
    "reply",
]
