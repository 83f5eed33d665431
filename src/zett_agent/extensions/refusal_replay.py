"""The seed guide's import path of :class:`RefusalReplayExtension` (a re-export)."""

from zett_agent.extensions._refusal_replay import RefusalReplay, RefusalReplayExtension

__all__ = ["RefusalReplay", "RefusalReplayExtension"]
