"""What a server asks of zett, and how zett answers: the callbacks given to the
``mcp`` SDK's ``Client`` for one connection (:class:`Asks`).

=====================  ==========================================================
``elicitation/create``  :mod:`zett_agent.mcp._elicitation` (always declared: without
                        a host callback every request is declined at once)
``sampling/create…``    :mod:`zett_agent.mcp._sampling` (declared only for a server
                        with ``sampling > 0``)
``roots/list``          the server's ``roots`` (declared only when it has some)
``notifications/        a TOOL_LOG event of the tool call in flight (the oldest,
message``               when several are), else the ``zett_agent.mcp`` logger
=====================  ==========================================================

Elicitation and sampling are answered only while a gated tool call of that server
is in flight (:attr:`~zett_agent.mcp._connection.Connection.active`), on its behalf.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types

from zett_agent._events import AgentEventType
from zett_agent._exchange import ModelResponse
from zett_agent.model._budgets import charge
from zett_agent.stop import StopInfo, StopReason

from ._elicitation import (
    DEFAULT_ELICITATION_TIMEOUT,
    REASON_META,
    Elicit,
    ElicitationRequest,
    ElicitationResponse,
    answer_problem,
    url_problem,
)
from ._sampling import sample

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["Asks"]

logger = logging.getLogger("zett_agent.mcp")

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@dataclass(frozen=True)
class Asks:
    """How one :class:`~zett_agent.mcp.MCPTools` answers its servers.

    ``elicit``: the host's :data:`~zett_agent.mcp._elicitation.Elicit` (None: every
    elicitation is declined at once); ``elicitation_timeout``: the most seconds a
    person may take; ``sampling_model``: the zett model (a ``ModelClient``) that
    answers sampling for servers with ``sampling > 0``.
    """

    elicit: Elicit | None = None
    elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT
    sampling_model: Any = None

    def options(self, connection: Connection) -> dict[str, Any]:
        """The keyword arguments of ``mcp.Client`` for ``connection``."""
        server = connection.server
        options: dict[str, Any] = {
            "logging_callback": self._logging(connection),
            "elicitation_callback": self._elicitation(connection),  # declines without elicit
        }
        if server.sampling > 0 and self.sampling_model is not None:
            options["sampling_callback"] = self._sampling(connection)
        if server.roots:
            options["list_roots_callback"] = self._roots(connection)
        if server.log_level is not None:
            options["log_level"] = server.log_level
        return options

    def _elicitation(self, connection: Connection) -> Any:
        async def answer(context: Any, params: Any) -> mcp_types.ElicitResult:
            active = connection.current_call()
            if active is None or self.elicit is None:  # outside a gated call: never
                return mcp_types.ElicitResult(action="decline")
            request = _request(connection, params, active.call)
            if request.mode == "url" and (problem := url_problem(request.url)) is not None:
                logger.warning("MCP server %s: elicitation declined: %s", request.server, problem)
                return _declined("decline", problem)  # the host never sees it
            active.report(AgentEventType.TOOL_INPUT_REQUESTED, request.to_dict())
            response = ElicitationResponse.cancel()
            with connection.person_asked(), anyio.move_on_after(self.elicitation_timeout):
                response = await self.elicit(request)
            content = dict(response.content or {}) if response.action == "accept" else None
            if request.mode == "url":
                content = None
            elif content is not None and (problem := answer_problem(request.schema, content)):
                why = f"the answer does not fit the requested schema: {problem}"
                logger.warning("MCP server %s: elicitation not answered: %s", request.server, why)
                return _declined("cancel", why)  # never sent
            return mcp_types.ElicitResult(action=response.action, content=content)

        return answer

    def _sampling(self, connection: Connection) -> Any:
        async def answer(context: Any, params: Any) -> Any:
            server = connection.server
            active = connection.current_call()
            if active is None:
                return _refused("zett answers sampling only during a tool call of this server")
            if active.samples >= server.sampling:
                return _refused(
                    f"this server may make {server.sampling} sampling requests per tool call"
                )
            model = self.sampling_model
            over = active.ledger.exhausted(model) if active.ledger is not None else None
            if over is not None and over.stop is not None:  # the run's budget: no new spend
                return _refused(f"the run's budget was reached: {over.stop.message}")
            active.samples += 1
            chars = _sampling_chars(params)
            limit = server.limits.max_sampling_chars
            if chars > limit:
                from ._limits import limit_text

                why = limit_text(
                    "this sampling request", chars, limit, "max_sampling_chars", "characters"
                )
                return _refused(f"{why}; the model was not asked")
            about = {"server": server.label, "model": model.name}
            active.report(AgentEventType.SAMPLING_REQUESTED, dict(about))
            spent: dict[str, Any] = {}

            def counted(response: ModelResponse) -> None:
                cost = charge(
                    response.provider or model.provider,
                    response.model,
                    response.usage,
                    active.ledger,
                    asked=model.name,
                )
                spent["usage"] = asdict(response.usage)
                spent["cost_usd"] = cost.usd if cost is not None else None
                spent["stop"] = (response.stop or StopInfo(StopReason.END_TURN)).reason.value

            try:
                return await sample(
                    model,
                    params,
                    max_tokens=server.sampling_max_tokens,
                    protocol_version=connection.protocol_version,
                    redact=connection.redact,
                    on_response=counted,
                )
            except Exception as error:  # the model failed: the server is told why
                spent["error"] = type(error).__name__
                return _refused(
                    connection.redact(f"the model failed: {type(error).__name__}: {error}")
                )
            finally:
                active.report(AgentEventType.SAMPLING_COMPLETED, {**about, **spent})

        return answer

    def _roots(self, connection: Connection) -> Any:
        roots = [_root(item) for item in connection.server.roots]

        async def answer(context: Any) -> mcp_types.ListRootsResult:
            return mcp_types.ListRootsResult(roots=roots)

        return answer

    def _logging(self, connection: Connection) -> Any:
        async def received(params: mcp_types.LoggingMessageNotificationParams) -> None:
            data = {
                "server": connection.server.label,
                "level": params.level,
                "logger": params.logger,
                "data": params.data
                if isinstance(params.data, str | int | float | bool)
                else _json(params.data),
            }
            if isinstance(data["data"], str):
                data["data"] = connection.redact(data["data"])
            active = connection.current_call()
            if active is not None and active.sink is not None:
                active.report(AgentEventType.TOOL_LOG, data)
            else:
                from zett_agent._terminal_text import one_line

                shown = data["data"] if isinstance(data["data"], str) else _json_text(data["data"])
                logger.log(  # a log handler may print it on a terminal: shown safe
                    _LEVELS.get(params.level, logging.INFO),
                    "MCP server %s (%s): %s",
                    connection.server.label,
                    one_line(params.logger or "log"),
                    one_line(shown),
                )

        return received


def _request(connection: Connection, params: Any, call: Any) -> ElicitationRequest:
    message = connection.redact(params.message)
    server = connection.server.label
    tool = call.name if call is not None else ""
    call_id = call.id if call is not None else ""
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return ElicitationRequest(
            mode="url",
            message=message,
            server=server,
            tool=tool,
            call_id=call_id,
            url=params.url,
            elicitation_id=params.elicitation_id or "",
        )
    schema = dict(params.requested_schema)
    return ElicitationRequest(
        mode="form", message=message, server=server, tool=tool, call_id=call_id, schema=schema
    )


def _sampling_chars(params: Any) -> int:
    """Characters of a sampling request's text: its system prompt and every text
    block of its messages."""
    total = len(params.system_prompt or "")
    for message in params.messages:
        content = message.content if isinstance(message.content, list) else [message.content]
        total += sum(len(getattr(item, "text", "") or "") for item in content)
    return total


def _declined(action: Any, reason: str) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action=action, _meta={REASON_META: reason})


def _refused(message: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=message)


def _root(item: str) -> mcp_types.Root:
    uri = item if "://" in item else Path(item).expanduser().resolve().as_uri()
    name = uri.rstrip("/").rsplit("/", 1)[-1] or uri
    return mcp_types.Root(uri=uri, name=name)  # type: ignore[arg-type]


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _json(value: Any) -> Any:
    """A log message's data as JSON values (bounded: any depth)."""
    from zett_agent._messages import storable_json

    return storable_json(value)
