"""``zett serve``: runs reach any AI SDK front end, and a page of our own.

Optional extra ``serve`` (Starlette + uvicorn); the core never imports this package.

* :func:`create_app` (:mod:`._app`): the ASGI app for an
  :class:`~zett_agent.Agent` over a :class:`~zett_agent.sessions.SessionStore`,
  to run with uvicorn or mount in a host's own app.
* :class:`UIMessageStream` (:mod:`._stream`): a run's events as the Vercel AI SDK's UI
  message stream protocol v1, usable on its own (sans-IO), with a ``data-stop``
  chunk per abnormal step.
* :func:`ui_messages` (:mod:`._history`): a stored session as UI messages (calls
  that wait for approval included, so a reloaded page can answer them).
* :func:`create_ag_ui_app` (:mod:`._ag_ui_app`) and :class:`AGUIEventStream`
  (:mod:`._ag_ui`): a run as AG-UI 1.0 events (``POST /api/ag-ui`` on
  :func:`create_app`'s server too), the stop in a ``zett.stop`` custom event.
* :func:`failure_text` (:mod:`._failure`): what a page is told when a run fails.
* :mod:`._request`: what each route takes, one strict schema per body (``POST
  /api/chat``: a user message, or the answers to waiting calls as
  ``addToolApprovalResponse`` sends them).
* :mod:`._security`: Host, Origin, token and size checks; ``static/``: the page.
"""

from ._ag_ui import OUTCOMES as AG_UI_OUTCOMES
from ._ag_ui import AGUIEventStream
from ._ag_ui_app import create_ag_ui_app
from ._app import ServeSettings, create_app
from ._chunks import Chunk, MessageMetadata, OutputData, StopData, StopMetadata
from ._failure import failure_text
from ._history import ui_messages
from ._stream import (
    FINISH_REASONS,
    UIMessageStream,
    approval_id,
    finish_reason,
    message_metadata,
    sse,
    stop_data,
)

__all__ = [
    "AG_UI_OUTCOMES",
    "FINISH_REASONS",
    "AGUIEventStream",
    "Chunk",
    "MessageMetadata",
    "OutputData",
    "ServeSettings",
    "StopData",
    "StopMetadata",
    "UIMessageStream",
    "approval_id",
    "create_ag_ui_app",
    "create_app",
    "failure_text",
    "finish_reason",
    "message_metadata",
    "sse",
    "stop_data",
    "ui_messages",
]
