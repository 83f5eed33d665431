"""A live session with one MCP server, in a task of its own: :class:`Connection`.

The ``mcp`` SDK's ``Client`` runs its transport in task groups, and a transport
failure (a server that died, a refused connection, a 401 an OAuth provider could
not resolve) is raised inside them: a client entered in the run's task would
cancel the run and raise an ``ExceptionGroup`` out of ``async with MCPTools``.
So each connection enters its client in a **session task** of the
:class:`~zett_agent.mcp.MCPTools` task group, entered and exited in that task
(the SDK requires it), and that task never raises: whatever ends the session is
kept as the connection's :attr:`~Connection.failure`. The rules:

=========================  ==================================================
a request of the run       runs in the run's task under a cancel scope the
(``tools/call``, a list)   connection registers; when the session ends, every
                           registered request is cancelled and raises
                           :class:`RequestFailedError` saying why (the model gets an
                           error result; the run goes on)
the server is unavailable  marked (``failure``); a streamable HTTP server is
                           connected again on its next request (not sooner than
                           a backoff of 1 s doubling to 30 s after a failed
                           attempt), and its tools are then listed again; a
                           stdio server's process is gone, so its requests fail
                           at once saying so (``MCPServer.reconnect`` changes
                           either default)
401 / 403                  the server needs authorization:
                           :class:`~zett_agent.errors.MCPAuthorizationError`
                           when connecting; an error result saying so for a call
a person is asked          (elicitation, an OAuth redirect) the clocks of the
                           connection's requests stop while the person is asked
                           (:meth:`Connection.person_asked`)
=========================  ==================================================
"""

from __future__ import annotations

import logging
import math
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import mcp_types

from zett_agent._events import AgentEventType, ToolEventSink, tool_events
from zett_agent._messages import ToolCall
from zett_agent.errors import ConfigError, MCPAuthorizationError
from zett_agent.model._budgets import CURRENT_LEDGER, RunBudget

from ._current import CURRENT
from ._server import MCPServer

if TYPE_CHECKING:
    from ._asks import Asks

__all__ = [
    "CLIENT_NAME",
    "Connection",
    "RequestFailedError",
    "RequestTimeoutError",
    "client_info",
]

CLIENT_NAME = "zett-agent"
"""The name zett gives itself in ``initialize`` (``clientInfo``) and on 2026-07-28
requests."""

T = TypeVar("T")

_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 30.0
_CLOSE_GRACE = 5.0  # seconds a session may take to close before it is cancelled


_CALL: ContextVar[ActiveCall | None] = ContextVar("zett_mcp_call", default=None)
"""The connection whose session task (and the SDK tasks it starts) runs the code."""


class _RedactLogs(logging.Filter):
    """Takes the credentials of every live connection out of the ``mcp`` SDK's log
    records (its OAuth client logs requests and errors), before any handler."""

    def __init__(self) -> None:
        super().__init__()
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.connections:
            return True
        text = record.getMessage()
        clean = text
        for connection in list(self.connections):
            clean = connection.redact(clean)
        if clean != text:
            record.msg, record.args = clean, ()
        return True


_REDACT_LOGS = _RedactLogs()


def _watch_logs(connection: Connection) -> None:
    """Filter the loggers of the SDK, its HTTP client and zett's MCP package (a
    logger's filters see only its own records, so each one is filtered)."""
    import mcp.client.auth.oauth2  # noqa: F401 - its loggers exist from here on

    names = [*logging.root.manager.loggerDict, "client", "zett_agent.mcp"]
    for name in names:
        if name in ("client", "zett_agent.mcp") or name.split(".")[0] in ("mcp", "httpx2"):
            target = logging.getLogger(name)
            if _REDACT_LOGS not in target.filters:
                target.addFilter(_REDACT_LOGS)
    _REDACT_LOGS.connections.add(connection)


def client_info() -> mcp_types.Implementation:
    """``zett-agent`` and the installed version of the package."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("zett-agent")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        number = "0+unknown"
    return mcp_types.Implementation(name=CLIENT_NAME, version=number)


class RequestFailedError(Exception):
    """A request to the server got no answer; the message says why, naming the server."""


class RequestTimeoutError(RequestFailedError):
    """A request took longer than its timeout (a person's wait not counted)."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


@dataclass(eq=False)
class Clock:
    """A deadline that stops while a person is asked: ``scope`` is cancelled when
    ``seconds`` of unpaused time have passed (``math.inf``: never)."""

    seconds: float
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    failed: str | None = None  # why the connection cancelled the scope
    _left: float = math.inf
    _paused: int = 0

    def __post_init__(self) -> None:
        self.scope.deadline = anyio.current_time() + self.seconds

    def pause(self) -> None:
        if self._paused == 0:
            self._left = max(0.0, self.scope.deadline - anyio.current_time())
            self.scope.deadline = math.inf
        self._paused += 1

    def resume(self) -> None:
        self._paused -= 1
        if self._paused == 0:
            self.scope.deadline = anyio.current_time() + self._left

    def fail(self, reason: str) -> None:
        self.failed = reason
        self.scope.cancel()


@dataclass(eq=False)
class ActiveCall:
    """A ``tools/call`` of a gated tool call, in flight: what a server may ask of
    the client (elicitation, sampling) is answered only while one is, and on its
    behalf (``call`` is zett's call, ``sink`` where its events go)."""

    call: ToolCall | None
    sink: ToolEventSink | None
    samples: int = 0
    ledger: RunBudget | None = field(default_factory=CURRENT_LEDGER.get)
    """The ledger of the run whose tool call this is (sampling spend counts there)."""

    def report(self, kind: AgentEventType, data: dict[str, Any]) -> None:
        if self.sink is not None and self.call is not None:
            self.sink(kind, self.call, data)


@dataclass(eq=False)
class _Session:
    """One attempt at a session: what its task and the requests on it share."""

    stop: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    ready: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    outcome: list[BaseException | None] = field(default_factory=list)
    clocks: set[Clock] = field(default_factory=set)
    client: Any = None
    group: anyio.abc.TaskGroup | None = None  # for tasks that live as long as the session


class Connection:
    """One server's session, run in a task of ``group``; made and closed by
    :class:`~zett_agent.mcp.MCPTools`.

    ``changed`` is set when the server says its tool list changed (or after a
    reconnection: a new session may offer other tools); ``failure`` says why the
    server is unavailable (None while it is connected).
    """

    def __init__(
        self, server: MCPServer, group: anyio.abc.TaskGroup, asks: Asks | None = None
    ) -> None:
        self.server = server
        self.changed = False
        self.name = ""  # the server's own name (serverInfo), when it gives one
        self.failure: str | None = "not connected yet"
        self.protocol_version: str | None = None
        self._group = group
        self._asks = asks
        self._session = _Session()
        self._session.closed.set()
        self._waits: set[Clock] = set()  # connection attempts
        self._lock = anyio.Lock()
        self._backoff = 0.0
        self._next_attempt = 0.0
        self._denied: tuple[int, str] | None = None  # the last 401/403 and its challenge
        self._closing = False
        self.on_message: list[Callable[[Any], Awaitable[None]]] = []
        self.active: list[ActiveCall] = []
        """The gated tool calls in flight on this server, oldest first."""
        _watch_logs(self)

    @property
    def reconnects(self) -> bool:
        """Whether a lost session is connected again on the next request."""
        if self.server.reconnect is not None:
            return self.server.reconnect
        return self.server.url is not None

    @property
    def client(self) -> Any:
        """The ``mcp`` ``Client`` of the live session (None while unavailable)."""
        return self._session.client

    # ------------------------------------------------------------ lifetime

    async def open(self) -> None:
        """Start or reach the server and greet it.

        Raises :class:`~zett_agent.errors.MCPAuthorizationError` when it needs an
        authorization zett could not get, else :class:`ConfigError` naming the
        command or URL when it cannot be started, reached or greeted within
        ``connect_timeout`` (a person's wait, such as an OAuth redirect, not
        counted)."""
        error = await self._connect()
        if error is not None:
            raise self.config_error("could not be started", error)

    async def close(self) -> None:
        """End the session (the SDK closes the transport; a stdio server is
        stopped), cancelling it after a grace period. Never raises."""
        self._closing = True
        session = self._session
        session.stop.set()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_CLOSE_GRACE):
                await session.closed.wait()
            session.scope.cancel()

    async def _connect(self) -> BaseException | None:
        """Start a session task and wait until it is greeted or has failed."""
        session = self._session = _Session()
        self._denied = None
        clock = Clock(self.server.connect_timeout)
        self._waits.add(clock)
        try:
            self._group.start_soon(self._run_session, session)
            with clock.scope:
                await session.ready.wait()
        finally:
            self._waits.discard(clock)
        if not session.outcome:  # not greeted in time
            session.scope.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_GRACE):
                await session.closed.wait()
            timeout = self.server.connect_timeout
            return TimeoutError(f"no answer to the greeting within {timeout:g} seconds")
        return session.outcome[0]

    async def _run_session(self, session: _Session) -> None:
        """The session task: enter the client, wait for :meth:`close`, exit it.
        Never raises; what ended it becomes :attr:`failure` (while it is the
        connection's current session)."""
        from mcp import Client

        error: BaseException | None = None
        CURRENT.set(self)  # this task's context: the SDK's tasks inherit it
        try:
            with session.scope:
                async with AsyncExitStack() as stack:
                    client = Client(
                        await self._transport(stack),
                        mode=self.server.mode,
                        message_handler=self._on_message,
                        read_timeout_seconds=None,  # each request has its own clock
                        client_info=client_info(),
                        cache=None,
                        **(self._asks.options(self) if self._asks is not None else {}),
                    )
                    await stack.enter_async_context(client)
                    session.group = await stack.enter_async_context(anyio.create_task_group())
                    stack.callback(session.group.cancel_scope.cancel)  # runs before it exits
                    session.client = client
                    info = client.server_info
                    self.name = info.name if info is not None else ""
                    self.protocol_version = client.protocol_version
                    self.failure = None
                    self._backoff = 0.0
                    await self._set_log_level(client)
                    session.outcome.append(None)
                    session.ready.set()
                    self._listen_for_changes(client, session.group)
                    await session.stop.wait()
        except (KeyboardInterrupt, SystemExit):  # pragma: no cover - the process ends
            raise
        except BaseException as caught:  # nothing leaves the session task
            error = caught
        finally:
            current = session is self._session
            session.client = None
            if current and error is not None and not self._closing:
                self.failure = _why(error)
            elif current and self.failure is None:
                self.failure = "the session was closed"
            if not session.outcome:
                session.outcome.append(
                    error or RuntimeError("the session ended before the greeting")
                )
            session.ready.set()
            for clock in list(session.clocks):
                clock.fail(self.failure or "the session ended")
            session.closed.set()

    def _listen_for_changes(self, client: Any, group: anyio.abc.TaskGroup) -> None:
        """On a 2026-07-28 connection list changes arrive only on a
        ``subscriptions/listen`` stream: keep one open in a task of the session
        (never raising; a lost stream just stops refreshes)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # earlier versions send notifications/tools/list_changed

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _ in subscription:
                        self.changed = True
            except Exception:  # the server went away or does not honour it
                return

        group.start_soon(listen)

    def start_soon(self, task: Callable[[Any], Awaitable[None]]) -> bool:
        """Run ``task(client)`` in the live session (cancelled when it ends; its
        errors are its own: it must not raise). False when no session is live."""
        session = self._session
        if session.client is None or session.group is None:
            return False
        client = session.client

        async def guarded() -> None:
            try:
                await task(client)
            except Exception:  # a task of a session never ends it
                return

        session.group.start_soon(guarded)
        return True

    async def _set_log_level(self, client: Any) -> None:
        """``logging/setLevel`` on a handshake-era connection whose server logs,
        when the server's ``log_level`` asks for messages (2026-07-28 requests carry
        the level instead); a server that refuses it is left at its default."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        level = self.server.log_level
        capabilities = client.server_capabilities
        if level is None or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        if capabilities is None or capabilities.logging is None:
            return
        import warnings

        with warnings.catch_warnings(), anyio.move_on_after(self.server.timeout):
            warnings.simplefilter("ignore")
            try:
                await client.set_logging_level(level)
            except Exception:
                return

    async def _transport(self, stack: AsyncExitStack) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        server = self.server
        if server.url is not None:
            import httpx2

            async def seen(response: httpx2.Response) -> None:
                if response.status_code in (401, 403):
                    challenge = response.headers.get("www-authenticate", "")
                    self._denied = (response.status_code, challenge)
                elif response.is_success and str(response.url) == server.url:
                    self._denied = None

            from ._stdio import BoundedHTTP

            http = httpx2.AsyncClient(
                headers=dict(server.headers),
                auth=server.auth,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [seen]},
                transport=BoundedHTTP(server.limits),
            )
            await stack.enter_async_context(http)
            return streamable_http_client(
                server.url,
                http_client=http,
                max_sse_event_size=2 * server.limits.max_message_bytes,  # ours comes first
            )
        assert server.command, "a stdio MCPServer has a command"
        from ._stdio import bounded_stdio, safe_errlog

        command, *args = server.command
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(server.env) or None, cwd=server.cwd
        )
        errlog, close_errlog = safe_errlog(server.log)
        stack.callback(close_errlog)  # after the client (and the process) is closed
        if sys.platform == "win32":  # pragma: no cover - the SDK's reader there
            return stdio_client(params, errlog=errlog)
        return bounded_stdio(params, errlog, server.limits)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.changed = True
        for handler in self.on_message:
            try:
                await handler(message)
            except Exception:  # a host's handler never ends the session
                continue

    # ------------------------------------------------------------ requests

    async def request(
        self, what: str, send: Callable[[Any], Awaitable[T]], *, timeout: float | None = None
    ) -> T:
        """``await send(client)`` on the live session (connecting again first when
        the server was lost and the transport allows), bounded by ``timeout``
        seconds (default: the server's ``timeout``; a person's wait not counted).

        Raises :class:`RequestFailedError` (the server is unavailable, or the session
        ended while waiting: the message names the server and says why),
        :class:`RequestTimeoutError`, or the SDK's ``MCPError`` for a JSON-RPC error the
        server answered. ``what`` names the request in messages."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        session = await self._live(what)
        client = session.client
        limit = self.server.timeout if timeout is None else timeout
        clock = Clock(limit)
        session.clocks.add(clock)
        done = False
        try:
            with clock.scope:
                result = await send(client)
                done = True
        except MCPError as error:
            if error.code == CONNECTION_CLOSED or clock.failed is not None:
                self._lost(session, f"MCPError: {error}")
                raise RequestFailedError(self._failed_text(what)) from error
            if self._denied is not None:
                raise RequestFailedError(self._authorization_text(what)) from error
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as error:
            self._lost(session, _why(error))
            raise RequestFailedError(self._failed_text(what)) from error
        finally:
            session.clocks.discard(clock)
        if done:
            return result
        if clock.failed is not None:  # the session ended while we waited
            raise RequestFailedError(self._failed_text(what))
        raise RequestTimeoutError(
            f"MCP server {self.server.label}: {what} did not finish within its timeout of "
            f"{limit:g} seconds; it was stopped",
            limit,
        )

    async def _live(self, what: str) -> _Session:
        """The live session, connecting again when allowed; else :class:`RequestFailedError`."""
        if self._session.client is not None:
            return self._session
        if self._closing or not self.reconnects:
            raise RequestFailedError(self._unavailable_text(what))
        async with self._lock:
            if self._session.client is not None:
                return self._session
            now = anyio.current_time()  # the event loop's clock
            if now < self._next_attempt:
                wait = self._next_attempt - now
                raise RequestFailedError(
                    f"{self._unavailable_text(what)}; the next reconnection attempt is in "
                    f"{wait:.1f} seconds"
                )
            before = self.failure
            error = await self._connect()
            if error is not None:
                self._backoff = min(_MAX_BACKOFF, max(_FIRST_BACKOFF, self._backoff * 2))
                self._next_attempt = anyio.current_time() + self._backoff
                self.failure = before
                raise RequestFailedError(
                    self.redact(
                        f"{self._unavailable_text(what)}; connecting again failed: {_why(error)}"
                    )
                )
            self.changed = True  # a new session: list its tools again
            return self._session

    def _lost(self, session: _Session, why: str) -> None:
        """The transport failed under a request: that session is over."""
        if session is self._session and session.client is not None:
            self.failure = why
        session.client = None
        session.stop.set()

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists (all pages); raises as :meth:`request`."""
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(1000):  # a server whose cursor never ends cannot hang us
            page: mcp_types.ListToolsResult = await self.request("tools/list", _lister(cursor))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.changed = False
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        call: ToolCall | None = None,
        timeout: float | None = None,
    ) -> mcp_types.CallToolResult:
        """``tools/call`` of the server's tool ``name`` for zett's ``call``; raises
        as :meth:`request`. While it is in flight the server may ask the client
        for input or a completion on the call's behalf (:attr:`active`), and its
        progress notifications become TOOL_PROGRESS events of the call."""
        active = ActiveCall(call, tool_events())

        async def progress(done: float, total: float | None, message: str | None) -> None:
            data: dict[str, Any] = {"server": self.server.label, "progress": done}
            if total is not None:
                data["total"] = total
            if message:
                data["message"] = self.redact(message)
            active.report(AgentEventType.TOOL_PROGRESS, data)

        async def send(client: Any) -> mcp_types.CallToolResult:
            result: mcp_types.CallToolResult = await client.call_tool(
                name, arguments, progress_callback=progress
            )
            return result

        self.active.append(active)
        token = _CALL.set(active)
        try:
            return await self.request(f"the call of its tool {name!r}", send, timeout=timeout)
        finally:
            _CALL.reset(token)
            self.active.remove(active)

    def current_call(self) -> ActiveCall | None:
        """The gated tool call a server's request (elicitation, sampling, a log
        message) is made for: the call whose task runs the code (a 2026-07-28
        input request is handled inside ``tools/call``), else the only call in
        flight, else the oldest (a 2025 connection does not say which; with
        several in flight the request is reported on the oldest); None when no
        call is in flight (the request is then refused)."""
        mine = _CALL.get()
        if mine is not None and mine in self.active:
            return mine
        return self.active[0] if self.active else None

    # ------------------------------------------------------------ people

    @contextmanager
    def person_asked(self) -> Iterator[None]:
        """While the block runs (a person is asked something), the clocks of this
        connection's requests and of a connection attempt stop."""
        clocks = [*self._waits, *self._session.clocks]
        for clock in clocks:
            clock.pause()
        try:
            yield
        finally:
            for clock in clocks:
                clock.resume()

    # ------------------------------------------------------------ messages

    def redact(self, text: str) -> str:
        """``text`` without the credentials of this server: its credential headers'
        values, what its ``auth`` holds (tokens, refresh token, client secret), and
        those of its URL (the URL quoted whole becomes its :attr:`~MCPServer.label`;
        a password or ``?api_key=`` value elsewhere becomes ``[redacted]``)."""
        from zett_agent._urls import redact_urls_in, url_secrets
        from zett_agent.model._redact import Redactor, secrets_of

        from ._auth import auth_secrets

        url = self.server.url
        if url is not None and url in text:
            text = text.replace(url, self.server.label)
        text = redact_urls_in(text)
        secrets = set(secrets_of(None, self.server.headers)) | auth_secrets(self.server.auth)
        secrets |= url_secrets(url or "")
        redactor = Redactor(s for s in secrets if len(s) >= 8)
        return redactor.text(text) if redactor else text

    def config_error(self, doing: str, error: BaseException) -> ConfigError:
        """The error for the host: authorization needed, or ``doing`` failed."""
        denied = self._denied
        auth = _oauth_error(error)
        if denied is not None or auth is not None:
            return self._authorization_error(denied, auth)
        if isinstance(error, RequestFailedError):  # its message names the server already
            why = str(error).removeprefix(f"MCP server {self.server.label}").lstrip(": ")
        else:
            why = _why(error)
        return ConfigError(self.redact(f"MCP server {self.server.label} {doing}: {why}"))

    def _authorization_error(
        self, denied: tuple[int, str] | None, auth: BaseException | None
    ) -> MCPAuthorizationError:
        status, challenge = denied if denied is not None else (None, "")
        scope = _challenge_field(challenge, "scope")
        if auth is not None:
            how = f"its OAuth flow failed: {_why(auth)}"
        elif status == 403:
            how = "it answered 403 Forbidden" + (
                f" (insufficient_scope: {scope} is needed)" if scope else ""
            )
        else:
            how = f"it answered {status} Unauthorized"
        hint = (
            "; the OAuth provider given as auth= could not obtain an accepted token"
            if self.server.auth is not None
            else "; give the server auth= (zett_agent.mcp._auth: OAuth or a token provider)"
        )
        return MCPAuthorizationError(
            self.redact(f"MCP server {self.server.label} needs authorization: {how}{hint}"),
            server=self.server.label,
            status=status,
            scope=scope,
        )

    def _authorization_text(self, what: str) -> str:
        error = self._authorization_error(self._denied, None)
        return f"{what} failed: {error}"

    def _failed_text(self, what: str) -> str:
        if self._denied is not None:
            return self._authorization_text(what)
        return self.redact(
            f"MCP server {self.server.label} failed during {what}: {self.failure}; "
            "it is marked unavailable"
            + (" and is connected again on its next call" if self.reconnects else "")
        )

    def _unavailable_text(self, what: str) -> str:
        if self._denied is not None:
            return self._authorization_text(what)
        return (
            f"MCP server {self.server.label} is unavailable ({self.failure}): {what} was not sent"
        )


def _lister(cursor: str | None) -> Callable[[Any], Awaitable[mcp_types.ListToolsResult]]:
    async def send(client: Any) -> mcp_types.ListToolsResult:
        result: mcp_types.ListToolsResult = await client.list_tools(cursor=cursor)
        return result

    return send


def _why(error: BaseException) -> str:
    """The innermost useful message of an error (task groups wrap them)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        inner = [e for e in error.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        error = (inner or list(error.exceptions))[0]
    if isinstance(error, FileNotFoundError | PermissionError):
        return f"{type(error).__name__}: {error.strerror or error}"
    text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _oauth_error(error: BaseException) -> BaseException | None:
    """The SDK's OAuth error inside ``error`` (a task group may wrap it), if any."""
    try:
        from mcp.client.auth.exceptions import OAuthFlowError, OAuthTokenError
    except ImportError:  # pragma: no cover - the SDK always has them
        return None
    todo: list[BaseException] = [error]
    while todo:
        current = todo.pop()
        if isinstance(current, OAuthFlowError | OAuthTokenError):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        elif current.__cause__ is not None:
            todo.append(current.__cause__)
    return None


def _challenge_field(challenge: str, name: str) -> str | None:
    """A parameter of a ``WWW-Authenticate: Bearer ...`` challenge (RFC 6750)."""
    import re

    match = re.search(rf'{name}="([^"]*)"', challenge) or re.search(rf"{name}=([^,\s]+)", challenge)
    return match.group(1) if match else None
