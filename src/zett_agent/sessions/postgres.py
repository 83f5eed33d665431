"""The import path of :class:`PostgresSessionStore` (extra ``postgres``; a re-export)."""

from zett_agent.sessions._postgres import PG_LAYOUT_VERSION, PostgresSessionStore

__all__ = ["PG_LAYOUT_VERSION", "PostgresSessionStore"]
