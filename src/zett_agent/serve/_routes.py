"""The endpoint functions of the app (the table is in :mod:`._app`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from zett_agent._agent import Agent
from zett_agent._client import AgentClient
from zett_agent._messages import UserMessage
from zett_agent._resume import plan_resume
from zett_agent.errors import ConfigError, ResumeError, SessionStoreError
from zett_agent.protocols._body import user_parts
from zett_agent.sessions import live_rows
from zett_agent.sessions._base import messages_of
from zett_agent.sessions._decisions import pending_row
from zett_agent.vendors import PROTOCOL_MEDIA

from ._approval_flow import answer_approvals
from ._attachments import (
    file_parts,
    part_response,
    stored_part,
)
from ._backpressure import UIStreamResponse, chunks
from ._context import claim, is_json, part_counts, read_json, state_of, validated
from ._history import assistant_message_id, continuation, ui_messages
from ._rejoin import ResumableResponse
from ._rejoin import rejoin as rejoin_run
from ._request import (
    ElicitationAnswer,
    RequestError,
    ResumeBody,
    approval_responses,
    new_input,
    parse,
    valid_session_id,
)

logger = logging.getLogger("zett_agent.serve")

STATIC = Path(__file__).parent / "static"

# ---------------------------------------------------------------- endpoints


PAGE_HEADERS = {
    "cache-control": "no-cache",
    # the page loads only its own files, and no other site may frame it (it runs tools);
    # attachments it shows are data: URLs it made, or blob: URLs of bytes it fetched
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


async def info(request: Request) -> Response:
    state = state_of(request)
    agent = state.agent
    return JSONResponse(
        {
            "model": f"{agent.model.provider}:{agent.model.name}",
            "tools": sorted(agent.tools),
            "max_tokens": agent.config.max_tokens,
            "max_turns": agent.config.max_turns,
            "token_required": state.settings.token is not None,
            "attachments": {
                "max_bytes": state.settings.max_attachment_bytes,
                "media_types": _media_types(agent),
                "note": getattr(getattr(agent.model, "vendor", None), "media_note", ""),
            },
        }
    )


def _media_types(agent: Agent) -> list[str]:
    """The media types the agent's provider takes in a user message (the page's
    file picker offers them); every type a part may have when it cannot tell."""
    vendor = getattr(agent.model, "vendor", None)
    if vendor is None:
        return ["image/*", "audio/*", "application/pdf", "text/plain"]
    table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA.get(vendor.protocol, {})
    return sorted({t for rule in table.values() for t in rule.media_types})


async def chat(request: Request) -> Response:
    state = state_of(request)
    if not is_json(request):
        raise RequestError("send the body as application/json", 415)
    settings = state.settings
    # counted in the worker thread of a large body, and freed there when refused
    data = await read_json(request, settings.max_chat_body_bytes, check=part_counts(settings))
    body = validated(data, settings)
    session_id = valid_session_id(body.id)
    if body.messages[-1].role == "assistant":
        message_id, responses = approval_responses(body)
        return await answer_approvals(state, session_id, message_id, responses)
    text, files = new_input(body)
    if await state.client.pending_approval(session_id) is not None:
        raise RequestError(
            "tool calls wait for approval: approve or deny them first "
            "(addToolApprovalResponse, or POST /api/sessions/{id}/approve)",
            409,
        )
    stored: list[Any] = []
    if files:
        stored = [row.message for row in await state.client.store.rows(session_id)]
    parts = file_parts(files, session_id, stored, state.settings.max_attachment_bytes)
    vendor = getattr(state.agent.model, "vendor", None)
    if parts and vendor is not None:  # a part the provider cannot take: 422, nothing stored
        try:
            user_parts(UserMessage(text, parts), vendor, loaded=False)
        except ConfigError as error:
            raise RequestError(str(error), 422) from None
    claim(state, session_id)
    try:
        seq = await state.client.store.append(session_id, UserMessage(text, parts))
    except BaseException:
        state.running.discard(session_id)
        raise
    events = state.client.stream(None, session_id=session_id)
    if state.settings.resumable:  # the run outlives its reader (._rejoin)
        run = chunks(events, assistant_message_id(seq))
        done = lambda: state.running.discard(session_id)  # noqa: E731
        return ResumableResponse(state, session_id, assistant_message_id(seq), run, done)
    return UIStreamResponse(
        chunks(events, assistant_message_id(seq)),  # a new message after the question
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
        stalls=state.stalls,
    )


async def rejoin(request: Request) -> Response:
    """useChat's ``resume: true`` asks to rejoin a stream still running: 204 unless
    ``ServeSettings.resumable`` (then :func:`._rejoin.rejoin`)."""
    if state_of(request).settings.resumable:
        return await rejoin_run(request)
    valid_session_id(request.path_params["id"])
    return Response(status_code=204)


async def sessions(request: Request) -> Response:
    """The stored sessions, newest first; the first :data:`TITLED` get a ``title``
    (their first user message, cut to 80 characters)."""
    client = state_of(request).client
    found = await client.sessions()
    listed = []
    for n, info in enumerate(found):
        title = await _title(client, info.session_id) if n < TITLED else None
        listed.append(
            {
                "id": info.session_id,
                "title": title,
                "rows": info.rows,
                "created_at": info.created_at,
                "updated_at": info.updated_at,
            }
        )
    return JSONResponse({"sessions": listed})


TITLED = 50
"""How many sessions of ``GET /api/sessions`` get a title (each loads its session)."""


async def _title(client: AgentClient, session_id: str) -> str | None:
    try:
        messages = await client.messages(session_id)
    except SessionStoreError:
        return None
    for message in messages:
        if isinstance(message, UserMessage):
            text = " ".join(message.content.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return None


async def session(request: Request) -> Response:
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    if request.method == "DELETE":
        if session_id in state.running:
            raise RequestError("the session is running", 409)
        if not await state.client.delete(session_id):
            raise RequestError("no such session", 404)
        return JSONResponse({"id": session_id, "deleted": True})
    rows = await state.client.store.rows(session_id)
    if not rows:
        raise RequestError("no such session", 404)
    messages = ui_messages(rows, state.agent.continue_prompt)
    waiting = pending_row(live_rows(rows))
    return JSONResponse(
        {
            "id": session_id,
            "running": session_id in state.running,
            "messages": messages,
            # the row of the request whose calls wait (POST .../approve's request_seq)
            "approval_request_seq": None if waiting is None else waiting.seq,
        }
    )


async def stored_part_bytes(request: Request) -> Response:
    """A stored part's bytes (``GET /api/sessions/{id}/parts/{sha256}``): 404 unless a
    message of that session holds a part with those bytes."""
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    digest = request.path_params["sha256"]
    rows = await state.client.store.rows(session_id)
    part = stored_part([row.message for row in rows], digest)
    if part is None or part.url is not None:
        raise RequestError("no such part in this session", 404)
    return await part_response(part)


async def resume(request: Request) -> Response:
    """Continue a cut-off answer; the body is empty or ``{}`` (:class:`ResumeBody`)."""
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    await _no_fields(request, state.settings.max_body_bytes)
    rows = live_rows(await state.client.store.rows(session_id))
    if not rows:
        raise RequestError("no such session", 404)
    try:
        plan_resume(messages_of(rows), state.agent.model, state.agent.continue_prompt)
    except ResumeError as error:
        raise RequestError(str(error), 409) from None
    place = continuation(rows, state.agent.continue_prompt)
    claim(state, session_id)
    events = state.client.resume_stream(session_id)
    return UIStreamResponse(
        chunks(events, place.message_id, place.tool_ids),
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
        stalls=state.stalls,
    )


async def elicitation(request: Request) -> Response:
    """Answer an MCP server's elicitation the page showed (the ``id`` of its
    ``data-elicitation`` chunk). Body: ``{"action": "accept", "content": {...}}``,
    or ``{"action": "decline"}`` / ``"cancel"`` (:class:`ElicitationAnswer`). 204;
    404 when nothing waits for that id (answered already, or its run ended); 422
    for another body (the field named)."""
    state = state_of(request)
    if not is_json(request):
        raise RequestError("send the body as application/json", 415)
    data = await read_json(request, state.settings.max_body_bytes)
    answer = parse(ElicitationAnswer, data, 'send {"action": "accept", "content": {...}}')
    try:
        found = state.elicitations.answer(
            str(request.path_params["id"]), answer.action, answer.content
        )
    except ValueError as error:
        raise RequestError(str(error), 422) from None
    if not found:
        raise RequestError("nothing waits for that answer (answered, or its run ended)", 404)
    return Response(status_code=204)


async def _no_fields(request: Request, limit: int) -> None:
    """A body that must be empty or ``{}``: 422 naming a field it sends (415 for a
    body that is not sent as JSON)."""
    if request.headers.get("content-length", "0") != "0" and not is_json(request):
        raise RequestError("send no body, or {} as application/json", 415)
    data = await read_json(request, limit, empty=_EMPTY)
    if data is _EMPTY:
        return
    parse(ResumeBody, data, "this route takes no fields")


_EMPTY = object()
