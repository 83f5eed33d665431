""":func:`create_ag_ui_app`: the AG-UI route alone, for a host that serves nothing else."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from zett_agent._agent import Agent
from zett_agent.sessions import SessionStore

from ._ag_ui_route import ag_ui_run
from ._app import create_app
from ._context import ServeSettings

__all__ = ["create_ag_ui_app"]


def create_ag_ui_app(
    agent: Agent,
    store: SessionStore | None = None,
    settings: ServeSettings | None = None,
    **options: Any,
) -> Starlette:
    """An ASGI app whose only route is ``POST /`` (and ``POST /api/ag-ui``, the same
    route as in :func:`~._app.create_app`): an AG-UI 1.0 ``RunAgentInput`` answered
    with the run's AG-UI events (:mod:`._ag_ui`). Point an AG-UI client's
    ``HttpAgent({url})`` at it. Sessions (a thread is a session of ``store``, default
    in memory), approvals, the Host/Origin/token checks, the body limit and the
    lifespan are :func:`~._app.create_app`'s, with the same ``settings`` and keyword
    ``options`` (``owns``, ``handoff``, ``mcp``), and its errors (``ValueError``
    for a non-loopback host without a token)."""
    app = create_app(agent, store, settings, **options)
    app.router.routes[:] = [
        Route("/", ag_ui_run, methods=["POST"]),
        Route("/api/ag-ui", ag_ui_run, methods=["POST"]),
    ]
    return app
