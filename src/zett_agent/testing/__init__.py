"""Test helpers that ship with the library, so hosts can test offline:
:class:`ScriptedModel` (no socket) and :class:`ReplayServer` (a real socket
replaying recorded provider traffic)."""

from zett_agent.testing._replay import RecordedRequest, ReplayServer, Reply
from zett_agent.testing._scripted import ScriptedModel, ScriptedTurn, reply

__all__ = ["RecordedRequest", "ReplayServer", "Reply", "ScriptedModel", "ScriptedTurn", "reply"]
