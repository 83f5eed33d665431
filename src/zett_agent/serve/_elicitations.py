"""A page answers an MCP server's elicitation: the server asks during a tool call,
the run's stream carries a ``data-elicitation`` chunk (:mod:`._stream`), the page
shows a form (``static/app.js``) and posts the answer to
``POST /api/elicitations/{id}``, which resolves the waiting request.

:class:`Elicitations` is the ``elicitation`` callback :func:`~._app.create_app`
gives an ``MCPTools`` that has none. A request nobody answers waits until the
``MCPTools``'s ``elicitation_timeout`` (then ``cancel``), or until its run ends
(the page closed: the run is cancelled, and so is the wait).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from zett_agent.mcp._elicitation import ElicitationRequest, ElicitationResponse

__all__ = ["Elicitations"]

ACTIONS = ("accept", "decline", "cancel")


class Elicitations:
    """The elicitations waiting for the page, by their id."""

    def __init__(self) -> None:
        self._waiting: dict[
            str, tuple[anyio.Event, list[ElicitationResponse], ElicitationRequest]
        ] = {}

    async def ask(self, request: ElicitationRequest) -> ElicitationResponse:
        """Wait for the page's answer to ``request`` (its id is the chunk's)."""
        from zett_agent.mcp._elicitation import ElicitationResponse

        answered = anyio.Event()
        box: list[ElicitationResponse] = []
        self._waiting[request.id] = (answered, box, request)
        try:
            await answered.wait()
        finally:
            self._waiting.pop(request.id, None)
        return box[0] if box else ElicitationResponse.cancel()

    def answer(self, elicitation_id: str, action: str, content: Mapping[str, Any] | None) -> bool:
        """Resolve a waiting request; False when none has that id (answered, or
        over). Raises ``ValueError`` for an action other than accept, decline,
        cancel, or an accepted form answer that does not fit the requested schema
        (naming the field; the request keeps waiting for a valid one)."""
        from zett_agent.mcp._elicitation import ElicitationResponse, answer_problem

        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
        waiting = self._waiting.get(elicitation_id)
        if waiting is None:
            return False
        answered, box, request = waiting
        if action == "accept" and request.mode == "form":
            problem = answer_problem(request.schema, content or {})
            if problem is not None:
                raise ValueError(f"the answer does not fit the form: {problem}")
        box.append(ElicitationResponse(action, dict(content or {}) if action == "accept" else None))  # type: ignore[arg-type]
        answered.set()
        return True
