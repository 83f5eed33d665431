"""What MCP servers offer besides tools: resources and prompts, as zett values
(:class:`ServerContent`, mixed into :class:`~zett_agent.mcp.MCPTools`).

==================  ==============================================================
resources           :meth:`~ServerContent.list_resources` (every page, every
                    server), :meth:`~ServerContent.read_resource`, and
                    :meth:`~ServerContent.resource_message`: a resource as a
                    :class:`~zett_agent.UserMessage` a host adds to the
                    conversation (text as it is, under a ``[resource URI type]``
                    line; a blob described, like a tool result's)
subscriptions       :meth:`~ServerContent.subscribe`: ``on_update(uri)`` is called
                    when the server says the resource changed
                    (``resources/subscribe`` and
                    ``notifications/resources/updated`` on a 2025 connection; a
                    ``subscriptions/listen`` stream on 2026-07-28, where
                    ``resources/subscribe`` is gone)
prompts             :meth:`~ServerContent.list_prompts`, and
                    :meth:`~ServerContent.get_prompt`: the prompt's messages as
                    zett messages (``user`` -> UserMessage, ``assistant`` ->
                    AssistantMessage), ready to send as a run's history
==================  ==============================================================

A request that fails is the documented ``ConfigError`` naming the server (never an
``ExceptionGroup``), like the listing of tools. A read is bounded by the server's
``MCPLimits.max_resource_bytes``: a resource whose listed ``size`` is over it is
refused before anything is read, one whose contents are over it after the read
(``ConfigError`` naming the limit either way). ``server`` picks a server by its
position in ``MCPTools.servers``, its own name (``serverInfo``) or its label
(command line or URL); None: every server (for lists) or the one that lists the
URI (for reads).
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types

from zett_agent._messages import AssistantMessage, Message, UserMessage
from zett_agent.errors import ConfigError

from ._connection import Connection
from ._convert import _item_text

__all__ = ["MCPPrompt", "MCPResource", "ServerContent"]


def _media(item: Any) -> Any:
    """A blob resource as an image, document or audio part (None: another kind,
    invalid, or too large for a part)."""
    from zett_agent._parts import AudioPart, DocumentPart, ImagePart

    if not isinstance(item, mcp_types.BlobResourceContents) or not item.mime_type:
        return None
    for cls in (ImagePart, DocumentPart, AudioPart):
        try:
            return cls.from_data_url(f"data:{item.mime_type};base64,{item.blob}")
        except ValueError:
            continue
    return None


ServerKey = int | str | None
OnUpdate = Callable[[str], Awaitable[None] | None]


@dataclass(frozen=True)
class MCPResource:
    """A resource a server lists: ``uri``, ``name``, ``title``, ``description``,
    ``mime_type``, ``size`` (bytes, as the server announced it; None: not
    said); ``server`` is the server's label."""

    server: str
    uri: str
    name: str
    title: str = ""
    description: str = ""
    mime_type: str = ""
    size: int | None = None


@dataclass(frozen=True)
class MCPPrompt:
    """A prompt a server lists; ``arguments`` are ``(name, description,
    required)``."""

    server: str
    name: str
    title: str = ""
    description: str = ""
    arguments: tuple[tuple[str, str, bool], ...] = ()


class ServerContent:
    """Resources and prompts of the connected servers (see the module docstring)."""

    connections: list[Connection]
    _resource_owner: dict[str, Connection]
    _resource_size: dict[str, int | None]

    # ------------------------------------------------------------ choosing

    def _chosen(self, server: ServerKey) -> list[Connection]:
        if server is None:
            return list(self.connections)
        for index, connection in enumerate(self.connections):
            if server in (index, connection.name, connection.server.label):
                return [connection]
        raise ConfigError(f"no MCP server {server!r} in this MCPTools")

    async def _ask(self, connection: Connection, what: str, send: Any) -> Any:
        try:
            return await connection.request(what, send)
        except Exception as error:
            raise connection.config_error(f"{what} failed", error) from error

    async def _owner(self, uri: str, server: ServerKey) -> Connection:
        if server is not None:
            return self._chosen(server)[0]
        owner = self._resource_owner.get(uri)
        if owner is None:
            await self.list_resources()
            owner = self._resource_owner.get(uri)
        if owner is None:
            if len(self.connections) == 1:
                return self.connections[0]  # a templated URI it did not list
            raise ConfigError(f"no MCP server lists the resource {uri}: name one with server=")
        return owner

    # ------------------------------------------------------------ resources

    async def list_resources(self, server: ServerKey = None) -> list[MCPResource]:
        """The resources of ``server`` (every page), or of every server that
        offers resources. Raises ``ConfigError`` naming a server that fails."""
        found: list[MCPResource] = []
        for connection in self._chosen(server):
            client = connection.client
            capabilities = client.server_capabilities if client is not None else None
            if server is None and capabilities is not None and capabilities.resources is None:
                continue
            cursor: str | None = None
            for _ in range(1000):
                page = await self._ask(
                    connection,
                    "resources/list",
                    lambda c, cursor=cursor: c.list_resources(cursor=cursor),
                )
                for item in page.resources:
                    self._resource_owner.setdefault(str(item.uri), connection)
                    self._resource_size[str(item.uri)] = item.size
                    found.append(
                        MCPResource(
                            server=connection.server.label,
                            uri=str(item.uri),
                            name=item.name,
                            title=item.title or "",
                            description=item.description or "",
                            mime_type=item.mime_type or "",
                            size=item.size,
                        )
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
        return found

    async def read_resource(
        self, uri: str, *, server: ServerKey = None
    ) -> mcp_types.ReadResourceResult:
        """``resources/read`` of ``uri`` (its text or blob contents); raises
        ``ConfigError`` for a failed read or one over ``max_resource_bytes``."""
        from ._convert import _size
        from ._limits import limit_text

        connection = await self._owner(uri, server)
        limit = connection.server.limits.max_resource_bytes
        label = connection.server.label
        if uri not in self._resource_size:
            with contextlib.suppress(ConfigError):  # its announced size comes first
                await self.list_resources(self.connections.index(connection))
        announced = self._resource_size.get(uri)
        if announced is not None and announced > limit:
            why = limit_text(f"resource {uri}", announced, limit, "max_resource_bytes")
            raise ConfigError(f"MCP server {label}: {why} (as its listing says); not read")
        result: mcp_types.ReadResourceResult = await self._ask(
            connection, f"resources/read {uri}", lambda c: c.read_resource(uri)
        )
        held = sum(
            len(item.text.encode()) if isinstance(item, mcp_types.TextResourceContents)
            else _size(getattr(item, "blob", ""))
            for item in result.contents
        )  # fmt: skip
        if held > limit:
            why = limit_text(f"resource {uri}", held, limit, "max_resource_bytes")
            raise ConfigError(f"MCP server {label}: {why}")
        return result

    async def resource_message(self, uri: str, *, server: ServerKey = None) -> UserMessage:
        """The resource as a user message to add to a conversation: each content
        under a ``[resource URI type]`` line; a blob that is an image, a document
        or audio is also one of the message's ``parts`` (:mod:`zett_agent._parts`),
        any other blob only described."""
        result = await self.read_resource(uri, server=server)
        connection = await self._owner(uri, server)
        lines = [
            _item_text(mcp_types.EmbeddedResource(type="resource", resource=item))[0]
            for item in result.contents
        ]
        parts = [part for item in result.contents if (part := _media(item)) is not None]
        text = connection.redact("\n".join(lines) or f"[resource {uri}: empty]")
        return UserMessage(text, tuple(parts))

    async def subscribe(self, uri: str, on_update: OnUpdate, *, server: ServerKey = None) -> None:
        """Call ``on_update(uri)`` (plain or async) whenever the server says the
        resource changed, for as long as the session lasts."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        connection = await self._owner(uri, server)

        async def notify(changed: str) -> None:
            outcome = on_update(changed)
            if inspect.isawaitable(outcome):
                await outcome

        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            acknowledged = anyio.Event()
            failed: list[BaseException] = []

            async def listen(client: Any) -> None:
                try:
                    async with client.listen(resource_subscriptions=[uri]) as subscription:
                        acknowledged.set()
                        async for event in subscription:
                            changed = getattr(event, "uri", None)
                            if changed is not None:
                                await notify(str(changed))
                except Exception as error:
                    failed.append(error)
                    acknowledged.set()

            if not connection.start_soon(listen):
                raise ConfigError(f"MCP server {connection.server.label} is unavailable")
            with anyio.move_on_after(connection.server.timeout):
                await acknowledged.wait()
            if failed or not acknowledged.is_set():
                why = f": {type(failed[0]).__name__}: {failed[0]}" if failed else ""
                raise ConfigError(
                    connection.redact(
                        f"MCP server {connection.server.label}: subscribing to {uri} failed{why}"
                    )
                )
            return

        client = connection.client
        capabilities = client.server_capabilities if client is not None else None
        resources = capabilities.resources if capabilities is not None else None
        if resources is None or not resources.subscribe:
            raise ConfigError(
                f"MCP server {connection.server.label} does not offer resource subscriptions"
            )

        async def updated(message: Any) -> None:
            is_update = isinstance(message, mcp_types.ResourceUpdatedNotification)
            if is_update and str(message.params.uri) == uri:
                await notify(uri)

        connection.on_message.append(updated)

        async def send(client: Any) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated only from 2026-07-28 on
                return await client.subscribe_resource(uri)

        await self._ask(connection, f"resources/subscribe {uri}", send)

    # ------------------------------------------------------------ prompts

    async def list_prompts(self, server: ServerKey = None) -> list[MCPPrompt]:
        """The prompts of ``server`` (every page), or of every server with prompts."""
        found: list[MCPPrompt] = []
        for connection in self._chosen(server):
            client = connection.client
            capabilities = client.server_capabilities if client is not None else None
            if server is None and capabilities is not None and capabilities.prompts is None:
                continue
            cursor: str | None = None
            for _ in range(1000):
                page = await self._ask(
                    connection,
                    "prompts/list",
                    lambda c, cursor=cursor: c.list_prompts(cursor=cursor),
                )
                for item in page.prompts:
                    arguments = tuple(
                        (a.name, a.description or "", bool(a.required))
                        for a in item.arguments or ()
                    )
                    found.append(
                        MCPPrompt(
                            server=connection.server.label,
                            name=item.name,
                            title=item.title or "",
                            description=item.description or "",
                            arguments=arguments,
                        )
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
        return found

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, server: ServerKey = None
    ) -> list[Message]:
        """The prompt's messages (``prompts/get``) as zett messages. With no
        ``server``, the first server that lists a prompt of that name."""
        if server is None:
            owners = [p.server for p in await self.list_prompts() if p.name == name]
            if not owners:
                raise ConfigError(f"no MCP server lists the prompt {name!r}")
            server = owners[0]
        connection = self._chosen(server)[0]
        result = await self._ask(
            connection, f"prompts/get {name}", lambda c: c.get_prompt(name, arguments or {})
        )
        messages: list[Message] = []
        for message in result.messages:
            text = connection.redact(_item_text(message.content)[0])
            if message.role == "assistant":
                messages.append(AssistantMessage(text))
            else:
                messages.append(UserMessage(text))
        return messages
